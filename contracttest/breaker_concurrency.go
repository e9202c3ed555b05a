package contracttest

import (
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// racers is the number of goroutines racing TryEnter when a cooldown ends.
const racers = 64

// concurrencyCases pin HalfOpenProbes under sequential and racing callers and
// the regression in which a HalfOpen rejection hid a recovered source.
func concurrencyCases() []breakerCase {
	return []breakerCase{
		{name: "HalfOpenProbesGrantsExactlyNConcurrentLeases", policy: func(p *gate.Policy) {
			longLease(p)
			p.HalfOpenProbes = 3
			p.SuccessThreshold = 2
		}, run: func(h *breakerHarness) {
			leases := []gate.Decision{h.toHalfOpen()}
			for range 2 {
				d := h.enter()
				h.probe(d)
				leases = append(leases, d)
			}
			assertDistinctTokens(h, leases)
			h.rejectedHalfOpen(h.enter())
			assert.Equal(h.t, 3, h.snap().ProbesInFlight)
			// Releasing one frees exactly one slot.
			h.record(leases[0], gate.Released)
			d := h.enter()
			h.probe(d)
			leases = append(leases, d)
			assertDistinctTokens(h, leases)
			h.rejectedHalfOpen(h.enter())
			// Two successes close; the third holder's lease went with HalfOpen.
			require.Equal(h.t, gate.HalfOpen, h.record(leases[1], gate.Success).State)
			require.Equal(h.t, gate.Closed, h.record(leases[2], gate.Success).State)
			h.miss(h.record(leases[3], gate.Success), gate.Closed, moment{})
		}},
		// The racers hold their leases until every one has answered, which
		// on a loaded machine and a real Redis took longer than the base
		// 400 ms lease: an expired lease is rightly granted again, so the
		// races run on long leases.
		{name: "ConcurrentTryEnterGrantsExactlyOneProbe", policy: longLease, run: func(h *breakerHarness) {
			raceForProbes(h)
		}},
		{name: "ConcurrentTryEnterGrantsExactlyThreeProbes", policy: func(p *gate.Policy) {
			longLease(p)
			p.HalfOpenProbes = 3
		}, run: func(h *breakerHarness) {
			raceForProbes(h)
		}},
		{name: "RecoveredSourceNotHiddenByHalfOpenRejection", run: func(h *breakerHarness) {
			// A caller rejected while the probe is in flight
			// feeds its RetryAfter into a max-only memo ("skip until T",
			// SetUntil only moves forward). The rejection must carry no wait,
			// so once the probe succeeds the memo hides nothing.
			memo := map[string]time.Time{}
			setUntil := func(src string, until time.Time) {
				if until.After(memo[src]) {
					memo[src] = until
				}
			}
			hidden := func(src string) bool { return memo[src].After(h.now()) }

			// The memo's clock: each answer counts from the start of its
			// call, so that on real time an Open memo ends by openUntil.
			openUntil := h.trip()
			// An Open rejection legitimately memoises the cooldown.
			d := h.enter()
			h.rejectedOpen(d, openUntil)
			setUntil(h.src, h.last.lo.Add(d.RetryAfter))
			h.advanceTo(openUntil)
			require.False(h.t, hidden(h.src), "the Open memo outlived the cooldown")

			probe := h.enter() // caller 1
			h.probe(probe)
			busy := h.enter() // caller 2, concurrent
			h.rejectedHalfOpen(busy)
			setUntil(h.src, h.last.lo.Add(busy.RetryAfter))
			u := h.record(probe, gate.Success)
			require.Equal(h.t, gate.Closed, u.State)
			setUntil(h.src, h.last.lo.Add(u.RetryAfter))

			assert.False(h.t, hidden(h.src), "recovered source still hidden by the memo until %v (now %v)", memo[h.src], h.clk.Now())
			h.admitted(h.enter())
		}},
	}
}

// raceForProbes waits out a cooldown and lets racers goroutines call
// TryEnter at once: exactly HalfOpenProbes get a probe, with distinct tokens,
// and every other caller gets a HalfOpen rejection with RetryAfter 0.
func raceForProbes(h *breakerHarness) {
	h.advanceTo(h.trip())

	type result struct {
		d   gate.Decision
		err error
	}
	results := make([]result, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			d, err := h.g.TryEnter(h.t.Context(), h.src)
			results[i] = result{d, err}
		})
	}
	close(start)
	wg.Wait()

	var probes []gate.Decision
	for i, r := range results {
		require.NoError(h.t, r.err, "racer %d", i)
		if r.d.Allowed {
			assert.True(h.t, r.d.Probe, "racer %d allowed without a probe: %+v", i, r.d)
			probes = append(probes, r.d)
			continue
		}
		h.rejectedHalfOpen(r.d)
	}
	require.Len(h.t, probes, h.p.HalfOpenProbes, "probes granted to %d racers", racers)
	assertDistinctTokens(h, probes)
	assert.Equal(h.t, h.p.HalfOpenProbes, h.snap().ProbesInFlight)
	for _, d := range probes {
		u := h.record(d, gate.Released)
		assert.True(h.t, u.Applied)
	}
	assert.Equal(h.t, 0, h.snap().ProbesInFlight, "every lease given back")
}

func assertDistinctTokens(h *breakerHarness, ds []gate.Decision) {
	h.t.Helper()
	seen := map[uint64]int{}
	for i, d := range ds {
		if j, dup := seen[d.Token]; dup {
			assert.Failf(h.t, "duplicate fencing token", "leases %d and %d share token %d", j, i, d.Token)
		}
		seen[d.Token] = i
	}
}
