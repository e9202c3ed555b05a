package memory

import "time"

// windowBuckets is the number of buckets of the rolling failure-rate window;
// gate.Policy documents the layout so that every backend counts alike.
const windowBuckets = 10

type bucket struct {
	idx    int64 // floor(unix ms / width ms); identifies the bucket's time slice
	calls  int
	failed int
}

// window is a rolling count of outcomes over windowBuckets slices of
// width ms. The zero value is an empty window.
type window struct {
	b [windowBuckets]bucket
}

func bucketIndex(now time.Time, width int64) int64 { return now.UnixMilli() / width }

func (w *window) add(now time.Time, width int64, failed bool) {
	idx := bucketIndex(now, width)
	b := &w.b[idx%windowBuckets]
	if b.idx != idx {
		*b = bucket{idx: idx}
	}
	b.calls++
	if failed {
		b.failed++
	}
}

// counts returns the calls and failures of the current bucket and the nine
// before it.
func (w *window) counts(now time.Time, width int64) (calls, failed int) {
	idx := bucketIndex(now, width)
	for i := range w.b {
		b := &w.b[i]
		if b.calls > 0 && b.idx > idx-windowBuckets && b.idx <= idx {
			calls += b.calls
			failed += b.failed
		}
	}
	return calls, failed
}

func (w *window) reset() { *w = window{} }
