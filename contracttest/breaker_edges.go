package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// growthCase pins that a failed probe grows the cooldown to exactly
// cooldown × multiplier (in whole µs) when that product is a whole number of
// µs: float noise in the product must not cost (or add) a microsecond, and
// every backend must agree.
func growthCase(name string, cooldown time.Duration, multiplier float64, want time.Duration) breakerCase {
	return breakerCase{name: name, policy: func(p *gate.Policy) {
		p.Cooldown = cooldown
		p.CooldownMultiplier = multiplier
		p.MaxCooldown = 2 * time.Second
	}, run: func(h *breakerHarness) {
		d := h.toHalfOpen()
		u := h.record(d, gate.Failure)
		require.Equal(h.t, gate.Open, u.State)
		h.opened(want, u.RetryAfter, "RetryAfter after a failed probe = cooldown × multiplier")
		assert.Equal(h.t, want, h.snap().Cooldown, "grown cooldown")
	}}
}

// edgeCases pin points of the state machine the other groups leave open.
func edgeCases() []breakerCase {
	return []breakerCase{
		// 230ms × 2.3 is 528.9999…ms in float nanoseconds, 330ms × 2.3 is
		// 758.9999…ms in float microseconds: exact products either way.
		growthCase("CooldownGrowthIsTheExactProductNs", 230*time.Millisecond, 2.3, 529*time.Millisecond),
		growthCase("CooldownGrowthIsTheExactProductUs", 330*time.Millisecond, 2.3, 759*time.Millisecond),
		{name: "FatalFromHalfOpenGrowthStopsAtMaxCooldown", policy: func(p *gate.Policy) {
			p.CooldownMultiplier = 3
			p.MaxCooldown = 500 * time.Millisecond
		}, run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			u := h.record(d, gate.Fatal)
			require.Equal(h.t, gate.Open, u.State)
			// 200ms × 3 = 600ms, capped at 500ms.
			openUntil := h.opened(500*time.Millisecond, u.RetryAfter, "Fatal in HalfOpen: grown cooldown, capped")
			assert.Equal(h.t, 500*time.Millisecond, h.snap().Cooldown)
			// At the cap it stays there.
			h.advanceTo(openUntil)
			d = h.enter()
			h.probe(d)
			u = h.record(d, gate.Failure)
			h.opened(500*time.Millisecond, u.RetryAfter, "probe failure at the cap")
			assert.Equal(h.t, 500*time.Millisecond, h.snap().Cooldown)
		}},
		{name: "WindowStartsEmptyAfterTripAndClose", policy: windowPolicy, run: func(h *breakerHarness) {
			// F F S F: 3 of 4 failed, the window trips.
			for _, o := range []gate.Outcome{gate.Failure, gate.Failure, gate.Success, gate.Failure} {
				require.True(h.t, h.record(h.enter(), o).Applied)
			}
			require.Equal(h.t, gate.Open, h.snap().State)
			openUntil := h.last.add(h.p.Cooldown)
			h.advanceTo(openUntil)
			d := h.enter()
			h.probe(d)
			require.Equal(h.t, gate.Closed, h.record(d, gate.Success).State)
			s := h.snap()
			assert.Equal(h.t, 0, s.WindowCalls, "closing starts an empty window")
			assert.Equal(h.t, 0, s.WindowFailures)
			// The failures of before the trip are gone: F S S S does not trip
			// (1 of 4), though the window width has not passed since them.
			for _, o := range []gate.Outcome{gate.Failure, gate.Success, gate.Success, gate.Success} {
				u := h.record(h.enter(), o)
				require.True(h.t, u.Applied)
				require.Equal(h.t, gate.Closed, u.State)
			}
			s = h.snap()
			assert.Equal(h.t, 4, s.WindowCalls)
			assert.Equal(h.t, 1, s.WindowFailures)
		}},
		{name: "ProbeSuccessesSurviveAReleasedProbe", policy: func(p *gate.Policy) {
			longLease(p)
			p.SuccessThreshold = 2
			p.HalfOpenProbes = 2
		}, run: func(h *breakerHarness) {
			a := h.toHalfOpen()
			b := h.enter()
			h.probe(b)
			h.rejectedHalfOpen(h.enter())
			u := h.record(a, gate.Success)
			require.True(h.t, u.Applied)
			assert.Equal(h.t, gate.HalfOpen, u.State, "one success of two")
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			u = h.record(b, gate.Released)
			require.True(h.t, u.Applied)
			assert.Equal(h.t, gate.HalfOpen, u.State)
			s := h.snap()
			assert.Equal(h.t, 1, s.ProbeSuccesses, "Released keeps the phase's successes")
			assert.Equal(h.t, 0, s.ProbesInFlight)
			// A released lease is not an outcome: recording it again is a miss.
			h.miss(h.record(b, gate.Success), gate.HalfOpen, moment{})
			c := h.enter()
			h.probe(c)
			u = h.record(c, gate.Success)
			assert.Equal(h.t, gate.Closed, u.State, "the second success closes")
		}},
		{name: "OneExpiredLeaseOfTwoFreesOneSlot", policy: func(p *gate.Policy) {
			p.HalfOpenProbes = 2
		}, run: func(h *breakerHarness) {
			a := h.toHalfOpen()
			aAt := h.last
			h.clk.Advance(h.p.ProbeTTL / 2)
			b := h.enter()
			h.probe(b)
			h.rejectedHalfOpen(h.enter())
			// a's lease ends; b's is still alive.
			h.advanceTo(aAt.add(h.p.ProbeTTL))
			c := h.enter()
			h.probe(c)
			assert.NotEqual(h.t, a.Token, c.Token, "a new lease, a new token")
			h.rejectedHalfOpen(h.enter())
			h.miss(h.record(a, gate.Success), gate.HalfOpen, moment{})
			s := h.snap()
			assert.Equal(h.t, 2, s.ProbesInFlight)
			assert.Equal(h.t, 0, s.ProbeSuccesses)
		}},
	}
}
