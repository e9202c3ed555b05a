package retry

import (
	"sync"
	"sync/atomic"
)

// DefaultConcurrency bounds the parts of a split call (embedding
// sub-batches, OCR pages) that run at once.
const DefaultConcurrency = 4

// forEachPart runs do(i) for i in [0, n) with at most limit running at once,
// and returns when every one has returned: no goroutine outlives the call. A
// panic in a part is re-raised in the caller's goroutine after the others
// finish (each part gives back its own admission as it unwinds).
func forEachPart(n, limit int, do func(i int)) {
	if n == 1 || limit <= 1 {
		for i := range n {
			do(i)
		}
		return
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		panicked atomic.Pointer[partPanic]
	)
	worker := func() {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				panicked.CompareAndSwap(nil, &partPanic{value: r})
			}
		}()
		for {
			i := int(next.Add(1) - 1)
			if i >= n || panicked.Load() != nil {
				return
			}
			do(i)
		}
	}
	workers := min(n, limit)
	wg.Add(workers)
	for range workers {
		go worker()
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(p.value)
	}
}

// partPanic carries a part's panic value to the caller's goroutine.
type partPanic struct{ value any }
