package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// ruleCases pin the optional rules a Policy can switch on or off beyond the
// defaults: each keeps today's behaviour at its zero value, which the other
// cases pin.
func ruleCases() []breakerCase {
	return []breakerCase{
		{name: "ConsecutiveFailuresDisabledNeverTrips", policy: func(p *gate.Policy) {
			p.ConsecutiveFailures = gate.Disabled
		}, run: func(h *breakerHarness) {
			for i := range 3 * baseFailures {
				u := h.record(h.enter(), gate.Failure)
				require.True(h.t, u.Applied)
				require.Equal(h.t, gate.Closed, u.State, "tripped after %d failures with the rule off", i+1)
			}
			assert.Equal(h.t, 3*baseFailures, h.snap().ConsecutiveFailures, "the run is still counted")
			// Fatal still opens.
			u := h.record(h.enter(), gate.Fatal)
			require.Equal(h.t, gate.Open, u.State)
		}},
		{name: "WindowFailuresTripsOnACountWithinThePeriod", policy: func(p *gate.Policy) {
			p.ConsecutiveFailures = gate.Disabled
			p.Window = 500 * time.Millisecond
			p.WindowMinCalls = 1
			p.WindowFailureRate = 0
			p.WindowFailures = 3
		}, run: func(h *breakerHarness) {
			// S F S F S S: 2 failures in 6 outcomes — no rate rule, below 3.
			for _, o := range []gate.Outcome{gate.Success, gate.Failure, gate.Success, gate.Failure, gate.Success, gate.Success} {
				u := h.record(h.enter(), o)
				require.True(h.t, u.Applied)
				require.Equal(h.t, gate.Closed, u.State)
			}
			s := h.snap()
			assert.Equal(h.t, 6, s.WindowCalls)
			assert.Equal(h.t, 2, s.WindowFailures)
			// The third failure within the period trips, though none were
			// consecutive and the share is 3/7.
			u := h.record(h.enter(), gate.Failure)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.Open, u.State, "3 failures within the window trip")
			h.opened(h.p.Cooldown, u.RetryAfter, "window count trip: RetryAfter = Cooldown")
		}},
		{name: "WindowFailuresForgetsFailuresOlderThanThePeriod", policy: func(p *gate.Policy) {
			p.ConsecutiveFailures = gate.Disabled
			p.Window = 500 * time.Millisecond
			p.WindowFailures = 2
		}, run: func(h *breakerHarness) {
			u := h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Closed, u.State)
			h.advancePast(h.p.Window + h.p.Window/10)
			u = h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Closed, u.State, "a failure older than Window still counted")
			u = h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Open, u.State, "2 failures within the window trip")
		}},
		{name: "HalfOpenCallsCapsProbesPerPhase", policy: func(p *gate.Policy) {
			longLease(p)
			p.SuccessThreshold = 3
			p.HalfOpenProbes = 3
			p.HalfOpenCalls = 3
		}, run: func(h *breakerHarness) {
			// gobreaker's MaxRequests 3: three probes in the phase, a
			// fourth is turned away even after two of them succeeded.
			d1 := h.toHalfOpen()
			u := h.record(d1, gate.Success)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.HalfOpen, u.State)
			d2 := h.enter()
			h.probe(d2)
			u = h.record(d2, gate.Success)
			require.Equal(h.t, gate.HalfOpen, u.State)
			d3 := h.enter()
			h.probe(d3)
			h.rejectedHalfOpen(h.enter())
			assert.Equal(h.t, 1, h.snap().ProbesInFlight)
			// A Released probe gives its place back.
			u = h.record(d3, gate.Released)
			require.True(h.t, u.Applied)
			d4 := h.enter()
			h.probe(d4)
			u = h.record(d4, gate.Success)
			require.Equal(h.t, gate.Closed, u.State, "3 successes close")
		}},
		{name: "HalfOpenCallsToleratesFailuresWhileSuccessThresholdIsReachable", policy: func(p *gate.Policy) {
			longLease(p)
			p.SuccessThreshold = 2
			p.HalfOpenProbes = 1
			p.HalfOpenCalls = 4
		}, run: func(h *breakerHarness) {
			// failsafe-go's WithSuccessThresholdRatio(2, 4): F S F keeps the
			// phase, the third failure makes 2 successes unreachable.
			d := h.toHalfOpen()
			u := h.record(d, gate.Failure)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.HalfOpen, u.State, "1 of 2 tolerated failures")
			d = h.enter()
			h.probe(d)
			require.Equal(h.t, gate.HalfOpen, h.record(d, gate.Success).State)
			d = h.enter()
			h.probe(d)
			require.Equal(h.t, gate.HalfOpen, h.record(d, gate.Failure).State, "2 of 2 tolerated failures")
			s := h.snap()
			assert.Equal(h.t, 1, s.ProbeSuccesses)
			assert.Equal(h.t, 2, s.ProbeFailures)
			d = h.enter()
			h.probe(d)
			u = h.record(d, gate.Failure)
			require.Equal(h.t, gate.Open, u.State, "2 successes are out of reach")
			h.opened(2*h.p.Cooldown, u.RetryAfter, "re-open after the phase: the cooldown grew")
			s = h.snap()
			assert.Equal(h.t, 0, s.ProbeFailures, "the phase's counts are gone")
			h.within(h.t, exactly(2*h.p.Cooldown), s.Cooldown, "Snapshot: the grown cooldown")
		}},
		{name: "HalfOpenCallsClosesAtSuccessThreshold", policy: func(p *gate.Policy) {
			longLease(p)
			p.SuccessThreshold = 2
			p.HalfOpenProbes = 2
			p.HalfOpenCalls = 3
		}, run: func(h *breakerHarness) {
			d1 := h.toHalfOpen()
			d2 := h.enter()
			h.probe(d2)
			require.Equal(h.t, gate.HalfOpen, h.record(d1, gate.Failure).State)
			require.Equal(h.t, gate.HalfOpen, h.record(d2, gate.Success).State)
			d3 := h.enter()
			h.probe(d3)
			h.rejectedHalfOpen(h.enter())
			u := h.record(d3, gate.Success)
			require.Equal(h.t, gate.Closed, u.State)
			s := h.snap()
			assert.Equal(h.t, 0, s.ProbeFailures)
			assert.Equal(h.t, 0, s.ProbeSuccesses)
		}},
	}
}
