package testutil

import (
	"net/http"
	"sync/atomic"
)

// concurrency counts the requests an Upstream is serving at once and the
// most it has served at once. Safe for concurrent use.
type concurrency struct {
	active, peak atomic.Int64
}

func (c *concurrency) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := c.active.Add(1)
		defer c.active.Add(-1)
		for old := c.peak.Load(); n > old && !c.peak.CompareAndSwap(old, n); old = c.peak.Load() {
		}
		next.ServeHTTP(w, r)
	})
}

// PeakConcurrency returns the most requests, of any endpoint, the fake has
// been serving at once: from the moment a request reached its handler until
// the handler returned (for a stream, once its last byte was written). A
// client's own count of its calls in flight is never below it, so a peak
// above a client's concurrency limit proves the limit was broken.
func (u *Upstream) PeakConcurrency() int { return int(u.conc.peak.Load()) }
