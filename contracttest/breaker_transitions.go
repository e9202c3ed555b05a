package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// Window policy of the failure-rate cases: 500ms in 10 buckets of 50ms, at
// least 4 outcomes, trip at a failure share ≥ 0.5. ConsecutiveFailures is set
// high so only the window can trip.
func windowPolicy(p *gate.Policy) {
	p.ConsecutiveFailures = 100
	p.Window = 500 * time.Millisecond
	p.WindowMinCalls = 4
	p.WindowFailureRate = 0.5
}

// transitionCases pin every transition of the state machine and cooldown
// growth.
func transitionCases() []breakerCase {
	return []breakerCase{
		{name: "ClosedToOpenAfterConsecutiveFailures", run: func(h *breakerHarness) {
			g0 := h.snap().Generation
			for i := range h.p.ConsecutiveFailures - 1 {
				u := h.record(h.enter(), gate.Failure)
				require.True(h.t, u.Applied)
				require.Equal(h.t, gate.Closed, u.State, "opened after %d of %d failures", i+1, h.p.ConsecutiveFailures)
				assert.Equal(h.t, i+1, h.snap().ConsecutiveFailures)
			}
			assert.Equal(h.t, g0, h.snap().Generation, "failures below the threshold are no transition")
			u := h.record(h.enter(), gate.Failure)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.Open, u.State)
			openUntil := h.opened(h.p.Cooldown, u.RetryAfter, "tripping Failure: RetryAfter = Cooldown")
			s := h.snap()
			assert.Equal(h.t, gate.Open, s.State)
			assert.Greater(h.t, s.Generation, g0, "Closed→Open is a new generation")
			h.withinTime(h.t, openUntil, s.OpenUntil, "openUntil = now + Cooldown")
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown)
			h.rejectedOpen(h.enter(), at(s.OpenUntil))
		}},
		{name: "SuccessResetsConsecutiveFailures", run: func(h *breakerHarness) {
			for range h.p.ConsecutiveFailures - 1 {
				h.record(h.enter(), gate.Failure)
			}
			u := h.record(h.enter(), gate.Success)
			require.True(h.t, u.Applied)
			assert.Equal(h.t, 0, h.snap().ConsecutiveFailures, "a Success resets the consecutive count")
			for range h.p.ConsecutiveFailures - 1 {
				u = h.record(h.enter(), gate.Failure)
			}
			assert.Equal(h.t, gate.Closed, u.State, "failures split by a Success are not consecutive")
			assert.Equal(h.t, h.p.ConsecutiveFailures-1, h.snap().ConsecutiveFailures)
		}},
		{name: "ClosedToOpenByFailureRateWindow", policy: windowPolicy, run: func(h *breakerHarness) {
			// S S S F: 4 outcomes, share 0.25 — stays Closed.
			for _, o := range []gate.Outcome{gate.Success, gate.Success, gate.Success, gate.Failure} {
				u := h.record(h.enter(), o)
				require.True(h.t, u.Applied)
				require.Equal(h.t, gate.Closed, u.State)
			}
			s := h.snap()
			assert.Equal(h.t, 4, s.WindowCalls)
			assert.Equal(h.t, 1, s.WindowFailures)
			// F: 5 outcomes, share 0.4 — still Closed.
			u := h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Closed, u.State, "share 2/5 is below 0.5")
			// F: 6 outcomes, share 0.5 — trips with only 3 consecutive failures.
			u = h.record(h.enter(), gate.Failure)
			require.True(h.t, u.Applied)
			require.Equal(h.t, gate.Open, u.State, "share 3/6 reaches WindowFailureRate 0.5")
			h.opened(h.p.Cooldown, u.RetryAfter, "window trip: RetryAfter = Cooldown")
		}},
		{name: "FailureRateWindowNeedsMinCalls", policy: windowPolicy, run: func(h *breakerHarness) {
			// F F F: share 1.0 but only 3 of WindowMinCalls 4 outcomes.
			for range 3 {
				u := h.record(h.enter(), gate.Failure)
				require.Equal(h.t, gate.Closed, u.State, "below WindowMinCalls the window cannot trip")
			}
			u := h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Open, u.State, "4 of 4 failures trip")
		}},
		{name: "SuccessResetsConsecutiveCountButNotWindow", policy: windowPolicy, run: func(h *breakerHarness) {
			h.record(h.enter(), gate.Failure)
			h.record(h.enter(), gate.Failure)
			h.record(h.enter(), gate.Success)
			s := h.snap()
			assert.Equal(h.t, 0, s.ConsecutiveFailures, "Success resets the consecutive count")
			assert.Equal(h.t, 3, s.WindowCalls, "Success is counted in the window")
			assert.Equal(h.t, 2, s.WindowFailures, "Success does not clear the window's failures")
			// 4 outcomes, 2 failures: share 0.5 trips though only 1 is consecutive.
			u := h.record(h.enter(), gate.Failure)
			require.Equal(h.t, gate.Open, u.State, "the window kept the failures before the Success")
		}},
		{name: "FailureRateWindowForgetsOldOutcomes", policy: windowPolicy, run: func(h *breakerHarness) {
			for range 3 {
				h.record(h.enter(), gate.Failure)
			}
			// One bucket beyond the window after the last of them: those
			// failures are gone.
			h.advancePast(h.p.Window + h.p.Window/10)
			for _, o := range []gate.Outcome{gate.Success, gate.Success, gate.Success, gate.Failure} {
				u := h.record(h.enter(), o)
				require.Equal(h.t, gate.Closed, u.State, "failures older than Window still counted")
			}
			s := h.snap()
			assert.Equal(h.t, 4, s.WindowCalls)
			assert.Equal(h.t, 1, s.WindowFailures)
		}},
		{name: "OpenToHalfOpenAtFirstTryEnterAtOpenUntil", run: func(h *breakerHarness) {
			var openUntil moment
			var gOpen uint64
			h.attempts(func() bool {
				openUntil = h.trip()
				gOpen = h.snap().Generation
				// Just before openUntil: an Open rejection with what is left
				// (1ms on a fake clock).
				h.advanceTo(openUntil.add(-h.shortOf()))
				d := h.enter()
				if !h.judged(openUntil, d.Allowed) {
					return false
				}
				h.rejectedOpen(d, openUntil)
				return true
			})
			// Reaching openUntil moves nothing by itself (Snapshot does not move).
			h.advanceTo(openUntil)
			s := h.snap()
			assert.Equal(h.t, gate.Open, s.State, "only TryEnter moves Open to HalfOpen")
			assert.Equal(h.t, time.Duration(0), s.RetryAfter, "Open whose cooldown passed reports 0")
			// The first TryEnter at openUntil (exactly, on a fake clock) gets the probe.
			d := h.enter()
			h.probe(d)
			s = h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Greater(h.t, s.Generation, gOpen, "Open→HalfOpen is a new generation")
			assert.Equal(h.t, 1, s.ProbesInFlight)
			assert.True(h.t, s.OpenUntil.IsZero(), "OpenUntil is zero unless Open, got %v", s.OpenUntil)
			h.rejectedHalfOpen(h.enter())
		}},
		{name: "HalfOpenToClosedAfterSuccessThreshold", policy: func(p *gate.Policy) { p.SuccessThreshold = 2 }, run: func(h *breakerHarness) {
			first := h.toHalfOpen()
			gHalf := h.snap().Generation
			u := h.record(first, gate.Success)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.HalfOpen, u.State, "1 of SuccessThreshold 2 successes keeps HalfOpen")
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			s := h.snap()
			assert.Equal(h.t, 1, s.ProbeSuccesses)
			assert.Equal(h.t, 0, s.ProbesInFlight, "a recorded probe gives its lease back")
			second := h.enter()
			h.probe(second)
			assert.NotEqual(h.t, first.Token, second.Token, "each lease has its own token")
			u = h.record(second, gate.Success)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State, "SuccessThreshold 2 successes close")
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			s = h.snap()
			assert.Equal(h.t, gate.Closed, s.State)
			assert.Greater(h.t, s.Generation, gHalf, "HalfOpen→Closed is a new generation")
			assert.Equal(h.t, 0, s.ConsecutiveFailures)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "closing resets the cooldown")
			assert.True(h.t, s.OpenUntil.IsZero())
			h.admitted(h.enter())
		}},
		{name: "HalfOpenToOpenOnProbeFailureGrowsCooldown", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			gHalf := h.snap().Generation
			u := h.record(d, gate.Failure)
			grown := 2 * h.p.Cooldown
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Open, u.State)
			openUntil := h.opened(grown, u.RetryAfter, "re-open after a failed probe: RetryAfter = Cooldown × 2")
			s := h.snap()
			assert.Equal(h.t, gate.Open, s.State)
			assert.Greater(h.t, s.Generation, gHalf, "HalfOpen→Open is a new generation")
			assert.Equal(h.t, grown, s.Cooldown)
			h.withinTime(h.t, openUntil, s.OpenUntil, "openUntil = now + grown cooldown")
			assert.Equal(h.t, 0, s.ProbesInFlight)
			h.rejectedOpen(h.enter(), at(s.OpenUntil))
		}},
		{name: "CooldownGrowsByMultiplierAndCapsAtMaxCooldown", policy: func(p *gate.Policy) {
			p.CooldownMultiplier = 1.5
			p.MaxCooldown = 800 * time.Millisecond
		}, run: func(h *breakerHarness) {
			openUntil := h.trip()
			// 200 → 300 → 450 → 675 → 800 (cap, not 1012.5) → 800.
			want := []time.Duration{300, 450, 675, 800, 800}
			for i, w := range want {
				w *= time.Millisecond
				h.advanceTo(openUntil)
				d := h.enter()
				h.probe(d)
				u := h.record(d, gate.Failure)
				require.Equal(h.t, gate.Open, u.State, "probe failure %d", i+1)
				openUntil = h.opened(w, u.RetryAfter, "RetryAfter after probe failure")
				assert.Equal(h.t, w, h.snap().Cooldown, "Cooldown after probe failure %d", i+1)
			}
		}},
		{name: "CooldownResetsAfterClosing", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			u := h.record(d, gate.Failure)
			require.Equal(h.t, gate.Open, u.State)
			openUntil := h.last.add(2 * h.p.Cooldown)
			require.Equal(h.t, 2*h.p.Cooldown, h.snap().Cooldown)
			h.advanceTo(openUntil)
			d = h.enter()
			h.probe(d)
			u = h.record(d, gate.Success)
			require.Equal(h.t, gate.Closed, u.State)
			assert.Equal(h.t, h.p.Cooldown, h.snap().Cooldown, "closing resets the cooldown to Policy.Cooldown")
			openUntil = h.trip()
			s := h.snap()
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown)
			h.withinTime(h.t, openUntil, s.OpenUntil, "the next trip uses Policy.Cooldown")
		}},
	}
}
