package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// forceHalfOpenCases pin gate.ForceHalfOpen: a one-off move to a fresh
// HalfOpen phase, from every state, that holds no override.
func forceHalfOpenCases() []breakerCase {
	return []breakerCase{
		{name: "ForceHalfOpenFromClosedGrantsAProbe", run: func(h *breakerHarness) {
			g0 := h.snap().Generation
			old := h.enter()
			h.admitted(old)
			h.force(gate.ForceHalfOpen)
			s := h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Equal(h.t, gate.ForceNone, s.Forced, "half-open is not held")
			assert.Greater(h.t, s.Generation, g0, "a new generation")
			assert.Equal(h.t, time.Duration(0), s.RetryAfter)
			assert.Equal(h.t, 0, s.ProbesInFlight)
			u := h.record(old, gate.Failure)
			h.miss(u, gate.HalfOpen, moment{})
			d := h.enter()
			h.probe(d)
			h.rejectedHalfOpen(h.enter())
			u = h.record(d, gate.Success)
			require.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State, "the phase runs by the policy")
		}},
		{name: "ForceHalfOpenFromOpenSkipsTheCooldownAndKeepsIt", run: func(h *breakerHarness) {
			h.trip()
			h.force(gate.ForceHalfOpen)
			d := h.enter()
			h.probe(d)
			u := h.record(d, gate.Failure)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.Open, u.State)
			h.opened(2*h.p.Cooldown, u.RetryAfter, "a failed probe grows the cooldown the record had")
		}},
		{name: "ForceHalfOpenLiftsAForcedOpen", run: func(h *breakerHarness) {
			h.force(gate.ForceOpen)
			h.force(gate.ForceHalfOpen)
			d := h.enter()
			h.probe(d)
			assert.Equal(h.t, gate.ForceNone, d.Forced)
			assert.Equal(h.t, gate.ForceNone, h.snap().Forced)
		}},
		{name: "ForceHalfOpenDropsProbeLeases", policy: longLease, run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			h.force(gate.ForceHalfOpen)
			h.miss(h.record(d, gate.Success), gate.HalfOpen, moment{})
			d2 := h.enter()
			h.probe(d2)
			assert.NotEqual(h.t, d.Token, d2.Token)
		}},
	}
}
