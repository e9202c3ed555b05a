package contracttest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/gate"
)

// quotaConcurrencyCases pin the limits under racing callers: no lost update
// lets one request, token or slot too many through.
func quotaConcurrencyCases() []quotaCase {
	const (
		concRPM    = 50     // a request refills every 1.2s: none within a case
		concTokens = 20_000 // 30 fit in qTPM; one refills in 2s
	)
	return []quotaCase{
		{name: "ConcurrentAcquiresNeverExceedRPM", limits: gate.Limits{RPM: concRPM}, run: func(h *quotaHarness) {
			granted := race(h, 4, func() bool {
				_, ok := h.tryAcquire(0)
				return ok
			})
			assert.Equal(h.t, concRPM, granted, "racing callers: granted requests")
			h.rejected(0, gate.LimitRPM)
		}},
		{name: "ConcurrentAcquiresNeverExceedTPM", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			granted := race(h, 2, func() bool {
				_, ok := h.tryAcquire(concTokens)
				return ok
			})
			assert.Equal(h.t, qTPM/concTokens, granted, "racing callers: granted %d-token requests", concTokens)
			h.rejected(concTokens, gate.LimitTPM)
		}},
		{name: "ConcurrentSettlesLoseNoRefund", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			const n, est = 60, qTPM / 60
			permits := make(chan gate.Permit, n)
			for range n {
				permits <- h.granted(est)
			}
			close(permits)
			var wg sync.WaitGroup
			for p := range permits {
				wg.Go(func() {
					assert.NoError(h.t, h.g.Settle(h.t.Context(), p, est/2), "Settle")
				})
			}
			wg.Wait()
			h.granted(qTPM / 2)
			h.rejected(qBig, gate.LimitTPM)
		}},
		{name: "ConcurrentAcquireReleaseNeverExceedsMaxInFlight", limits: gate.Limits{MaxInFlight: 3}, run: func(h *quotaHarness) {
			var cur, peak atomic.Int64
			granted := race(h, 16, func() bool {
				p, ok := h.tryAcquire(0)
				if !ok {
					return false
				}
				n := cur.Add(1)
				for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
				}
				cur.Add(-1)
				assert.NoError(h.t, h.g.Release(h.t.Context(), p), "Release")
				return true
			})
			assert.LessOrEqual(h.t, peak.Load(), int64(3), "peak in-flight")
			assert.Positive(h.t, granted, "some racing callers were granted")
			// Every slot came back.
			for range 3 {
				h.granted(0)
			}
			h.rejected(0, gate.LimitInFlight)
		}},
	}
}

// racers goroutines call try rounds times each, released together; race
// returns how many calls reported true.
func race(h *quotaHarness, rounds int, try func() bool) int {
	var (
		wg      sync.WaitGroup
		granted atomic.Int64
		start   = make(chan struct{})
	)
	for range racers {
		wg.Go(func() {
			<-start
			for range rounds {
				if try() {
					granted.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return int(granted.Load())
}

// tryAcquire is acquire for racing goroutines: it reports failures with
// assert, never FailNow, which must run on the test's own goroutine.
func (h *quotaHarness) tryAcquire(est int64) (gate.Permit, bool) {
	p, d, err := h.g.Acquire(h.t.Context(), h.src, est)
	if !assert.NoError(h.t, err, "Acquire(%q, %d)", h.src, est) {
		return gate.Permit{}, false
	}
	assert.GreaterOrEqual(h.t, d.RetryAfter, time.Duration(0), "RetryAfter is never negative")
	return p, d.Allowed
}
