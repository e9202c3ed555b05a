package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/gate"
)

// fatalReleasedCases pin Fatal from each state and Released.
func fatalReleasedCases() []breakerCase {
	return []breakerCase{
		{name: "FatalFromClosedOpensWithCurrentCooldown", run: func(h *breakerHarness) {
			g0 := h.snap().Generation
			u := h.record(h.enter(), gate.Fatal)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Open, u.State, "one Fatal opens at once")
			openUntil := h.opened(h.p.Cooldown, u.RetryAfter, "Fatal from Closed: RetryAfter = Cooldown")
			s := h.snap()
			assert.Equal(h.t, gate.Open, s.State)
			assert.Greater(h.t, s.Generation, g0)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "Fatal from Closed does not grow the cooldown")
			h.withinTime(h.t, openUntil, s.OpenUntil, "openUntil = now + Cooldown")
			h.rejectedOpen(h.enter(), at(s.OpenUntil))
		}},
		{name: "FatalFromHalfOpenGrowsCooldown", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			u := h.record(d, gate.Fatal)
			grown := 2 * h.p.Cooldown
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Open, u.State)
			openUntil := h.opened(grown, u.RetryAfter, "Fatal from HalfOpen grows the cooldown like a failed probe")
			s := h.snap()
			assert.Equal(h.t, grown, s.Cooldown)
			h.withinTime(h.t, openUntil, s.OpenUntil, "openUntil = now + grown cooldown")
			assert.Equal(h.t, 0, s.ProbesInFlight)
		}},
		{name: "FatalFromOpenPushesOpenUntil", run: func(h *breakerHarness) {
			h.attempts(func() bool {
				stale := h.enter()
				h.admitted(stale)
				openUntil := h.trip()
				g := h.snap().Generation
				h.clk.Advance(150 * time.Millisecond)
				// Stale (admitted while Closed) yet applied: the credential is bad
				// whenever the call was admitted.
				u := h.record(stale, gate.Fatal)
				assert.True(h.t, u.Applied, "Fatal applies even with a stale decision")
				assert.Equal(h.t, gate.Open, u.State)
				pushed := h.opened(h.p.Cooldown, u.RetryAfter, "openUntil pushed to now + Cooldown")
				s := h.snap()
				h.withinTime(h.t, pushed, s.OpenUntil, "openUntil = max(openUntil, now + current cooldown)")
				// 150ms after the trip, now + Cooldown is past the old openUntil
				// whatever the brackets.
				assert.True(h.t, s.OpenUntil.After(openUntil.hi), "openUntil moved back or stayed: %v, was %v … %v", s.OpenUntil, openUntil.lo, openUntil.hi)
				assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "Fatal from Open keeps the current cooldown")
				// doc.go: the generation grows on every transition; Open→Open is
				// none, so no assertion on it beyond "not smaller".
				assert.GreaterOrEqual(h.t, s.Generation, g)
				// The old openUntil passing no longer lets a probe through.
				h.advanceTo(openUntil)
				d := h.enter()
				if !h.judged(at(s.OpenUntil), d.Allowed) {
					return false
				}
				h.rejectedOpen(d, at(s.OpenUntil))
				return true
			})
		}},
		{name: "FatalWithStaleDecisionAppliesInHalfOpen", run: func(h *breakerHarness) {
			stale := h.enter()
			h.admitted(stale)
			probe := h.toHalfOpen()
			// A Closed-era call reports 401 while a probe is in flight.
			u := h.record(stale, gate.Fatal)
			assert.True(h.t, u.Applied, "Fatal applies even with a stale decision")
			assert.Equal(h.t, gate.Open, u.State)
			h.opened(2*h.p.Cooldown, u.RetryAfter, "Fatal in HalfOpen grows the cooldown")
			// The probe's lease went with the HalfOpen phase.
			s := h.snap()
			h.miss(h.record(probe, gate.Success), gate.Open, at(s.OpenUntil))
			assert.Equal(h.t, gate.Open, h.snap().State)
		}},
		{name: "FatalWithExpiredProbeLeaseApplies", run: func(h *breakerHarness) {
			old := h.toHalfOpen()
			h.advancePast(h.p.ProbeTTL)
			u := h.record(old, gate.Fatal)
			assert.True(h.t, u.Applied, "Fatal applies even with an expired lease")
			assert.Equal(h.t, gate.Open, u.State)
			h.opened(2*h.p.Cooldown, u.RetryAfter, "Fatal in HalfOpen grows the cooldown")
		}},
		{name: "ReleasedFreesProbeLease", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			h.rejectedHalfOpen(h.enter())
			before := h.snap()
			u := h.record(d, gate.Released)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.HalfOpen, u.State, "Released changes no state")
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			s := h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Equal(h.t, before.Generation, s.Generation, "Released is no transition")
			assert.Equal(h.t, 0, s.ProbesInFlight)
			assert.Equal(h.t, before.ProbeSuccesses, s.ProbeSuccesses)
			// At once, without any time passing, another caller gets a probe.
			next := h.enter()
			h.probe(next)
			assert.NotEqual(h.t, d.Token, next.Token)
			// A released lease cannot be recorded again.
			h.miss(h.record(d, gate.Success), gate.HalfOpen, moment{})
		}},
		{name: "ReleasedInClosedChangesNothing", policy: windowPolicy, run: func(h *breakerHarness) {
			h.record(h.enter(), gate.Failure)
			h.record(h.enter(), gate.Failure)
			before := h.snap()
			u := h.record(h.enter(), gate.Released)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State)
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			after := h.snap()
			assert.Equal(h.t, before.ConsecutiveFailures, after.ConsecutiveFailures, "Released does not reset the consecutive count")
			assert.Equal(h.t, before.WindowCalls, after.WindowCalls, "Released is not a window outcome")
			assert.Equal(h.t, before.WindowFailures, after.WindowFailures)
			assert.Equal(h.t, before.Generation, after.Generation)
		}},
	}
}
