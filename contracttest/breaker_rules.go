package contracttest

import (
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
	}
}
