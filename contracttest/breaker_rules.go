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
	}
}
