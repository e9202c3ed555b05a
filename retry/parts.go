package retry

import (
	"errors"
	"github.com/pgw-go/pgw/admission"
	"sync"
	"sync/atomic"

	"github.com/pgw-go/pgw/internal/errs"
)

// DefaultConcurrency bounds the parts of a split call (embedding
// sub-batches, OCR pages) that run at once.
const DefaultConcurrency = 4

// partLimit is how many parts of one split call run at once: concurrency,
// but no more than the scope's in-flight slots when every source has a
// MAX_IN_FLIGHT. More parts than slots would only compete with each other:
// under QUOTA_FULL=fail_fast the call's own parts would be refused the
// slots its other parts hold, and fail a call that nothing else contends.
func (l *Loop) partLimit(concurrency int) int {
	if l.partSlots > 0 && l.partSlots < concurrency {
		return l.partSlots
	}
	return concurrency
}

// siblingsOf is what a split call of n parts tells its parts' admissions
// of each other (admission.Siblings): under QUOTA_FULL=fail_fast a part
// refused the in-flight slots its siblings hold waits for one of them
// instead of failing. A call of one part has no siblings (nil).
func siblingsOf(n int) *admission.Siblings {
	if n <= 1 {
		return nil
	}
	return new(admission.Siblings)
}

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

// partStall is what a split call's parts know of its scope's stall: once a
// part ends stalled — it waited out the stall window while no call of the
// scope delivered — the parts that have not begun end with its error rather
// than wait a window each. Its parts run no more at once than the scope has
// slots (partLimit), so without it a call of n parts on a scope whose slots
// others hold would end after n windows, not one.
type partStall struct{ err atomic.Pointer[error] }

// note records err when it ends a part stalled.
func (s *partStall) note(err error) {
	var ase *errs.AllSourcesExhausted
	if errors.As(err, &ase) && ase.Reason == errs.ReasonStalled {
		s.err.CompareAndSwap(nil, &err)
	}
}

// stalled returns the error of a part that ended stalled, or nil.
func (s *partStall) stalled() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}
