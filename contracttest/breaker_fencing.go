package contracttest

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// fencingCases pin lease expiry and the fencing rules: an outcome whose
// decision is no longer current changes nothing.
func fencingCases() []breakerCase {
	return []breakerCase{
		{name: "ProbeLeaseExpiresAtProbeTTL", run: func(h *breakerHarness) {
			var old gate.Decision
			var expiry moment
			h.attempts(func() bool {
				old = h.toHalfOpen()
				expiry = h.last.add(h.p.ProbeTTL)
				// Just before the lease expires: still held.
				h.advanceTo(expiry.add(-h.shortOf()))
				d := h.enter()
				if !h.judged(expiry, d.Allowed) {
					return false
				}
				h.rejectedHalfOpen(d)
				return true
			})
			h.advanceTo(expiry)
			// The lease expired at grant + ProbeTTL: the next caller takes the
			// slot with a new token.
			fresh := h.enter()
			h.probe(fresh)
			assert.NotEqual(h.t, old.Token, fresh.Token, "a re-granted lease has a new token")
			h.rejectedHalfOpen(h.enter())
			// The vanished holder's late outcomes change nothing, and its
			// Released must not free the new holder's slot.
			for _, o := range []gate.Outcome{gate.Success, gate.Failure, gate.Released} {
				h.miss(h.record(old, o), gate.HalfOpen, moment{})
			}
			s := h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Equal(h.t, 0, s.ProbeSuccesses, "an expired lease's Success is not counted")
			assert.Equal(h.t, 1, s.ProbesInFlight, "the new lease is still held")
			h.rejectedHalfOpen(h.enter())
			u := h.record(fresh, gate.Success)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State)
		}},
		{name: "ExpiredProbeOutcomeChangesNothing", run: func(h *breakerHarness) {
			old := h.toHalfOpen()
			expiry := h.last.add(h.p.ProbeTTL)
			gHalf := h.snap().Generation
			// Expired but not yet re-granted: the lease no longer exists.
			h.advanceTo(expiry)
			h.miss(h.record(old, gate.Failure), gate.HalfOpen, moment{})
			h.miss(h.record(old, gate.Success), gate.HalfOpen, moment{})
			s := h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Equal(h.t, gHalf, s.Generation)
			assert.Equal(h.t, 0, s.ProbeSuccesses)
			assert.Equal(h.t, 0, s.ProbesInFlight, "an expired lease is forgotten")
			h.probe(h.enter())
		}},
		{name: "StaleClosedAdmissionAfterOpenChangesNothing", run: func(h *breakerHarness) {
			// Admitted while Closed; the breaker opens while the call runs.
			late := h.enter()
			h.admitted(late)
			openUntil := h.trip()
			before := h.snap()
			for _, o := range []gate.Outcome{gate.Success, gate.Failure, gate.Released} {
				h.miss(h.record(late, o), gate.Open, openUntil)
			}
			after := h.snap()
			assert.Equal(h.t, before.State, after.State)
			assert.Equal(h.t, before.Generation, after.Generation)
			assert.True(h.t, before.OpenUntil.Equal(after.OpenUntil), "openUntil moved: %v → %v", before.OpenUntil, after.OpenUntil)
			assert.Equal(h.t, before.Cooldown, after.Cooldown)
		}},
		{name: "OldGenerationOutcomeChangesNothing", run: func(h *breakerHarness) {
			// Admitted in one Closed generation, finishing in a later one after
			// a full Open → HalfOpen → Closed cycle.
			late := h.enter()
			h.admitted(late)
			d := h.toHalfOpen()
			require.Equal(h.t, gate.Closed, h.record(d, gate.Success).State)
			g := h.snap().Generation
			require.NotEqual(h.t, late.Token, g, "the cycle must have moved the generation")
			h.miss(h.record(late, gate.Failure), gate.Closed, moment{})
			h.miss(h.record(late, gate.Success), gate.Closed, moment{})
			s := h.snap()
			assert.Equal(h.t, 0, s.ConsecutiveFailures, "an old generation's Failure is not counted")
			assert.Equal(h.t, g, s.Generation)
		}},
		{name: "ProbeOutcomeAfterCloseChangesNothing", policy: func(p *gate.Policy) {
			p.HalfOpenProbes = 2
		}, run: func(h *breakerHarness) {
			first := h.toHalfOpen()
			second := h.enter()
			h.probe(second)
			require.Equal(h.t, gate.Closed, h.record(first, gate.Success).State)
			// The second lease went with the HalfOpen phase.
			h.miss(h.record(second, gate.Failure), gate.Closed, moment{})
			assert.Equal(h.t, 0, h.snap().ConsecutiveFailures)
		}},
		{name: "RecordOfNotAllowedDecisionIsMiss", run: func(h *breakerHarness) {
			// A zero Decision on a Closed source is not an admission.
			h.miss(h.record(gate.Decision{}, gate.Failure), gate.Closed, moment{})
			assert.Equal(h.t, 0, h.snap().ConsecutiveFailures, "a not-allowed Failure was counted")
			openUntil := h.trip()
			rejected := h.enter()
			require.False(h.t, rejected.Allowed)
			before := h.snap()
			// Fatal included: "a decision that was not allowed is always a
			// miss" — unlike a stale admission, it admitted no call at all.
			for _, o := range []gate.Outcome{gate.Success, gate.Failure, gate.Released, gate.Fatal} {
				h.miss(h.record(rejected, o), gate.Open, openUntil)
			}
			after := h.snap()
			assert.Equal(h.t, before.Generation, after.Generation)
			assert.True(h.t, before.OpenUntil.Equal(after.OpenUntil), "openUntil moved: %v → %v", before.OpenUntil, after.OpenUntil)
			// A HalfOpen rejection is no lease either.
			h.advanceTo(openUntil)
			h.probe(h.enter())
			busy := h.enter()
			h.rejectedHalfOpen(busy)
			h.miss(h.record(busy, gate.Released), gate.HalfOpen, moment{})
			h.miss(h.record(busy, gate.Success), gate.HalfOpen, moment{})
			s := h.snap()
			assert.Equal(h.t, 1, s.ProbesInFlight, "a rejected caller's Released freed the holder's lease")
			assert.Equal(h.t, 0, s.ProbeSuccesses)
		}},
		{name: "InvalidOutcomeReturnsError", run: func(h *breakerHarness) {
			d := h.enter()
			h.admitted(d)
			for _, o := range []gate.Outcome{0, gate.Released + 1, 255} {
				_, err := h.g.Record(h.t.Context(), h.src, d, o)
				assert.ErrorIs(h.t, err, gate.ErrUnknownOutcome, "Record with outcome %d", o)
			}
			// The rejected call consumed nothing: the decision still records.
			u := h.record(d, gate.Failure)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, 1, h.snap().ConsecutiveFailures)
		}},
	}
}
