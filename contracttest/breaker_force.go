package contracttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// RunBreakerForce runs the operator-override contract of gate.Forcer against
// the gates newGate builds: what ForceOpen, ForceClosed, ForceNone and
// ForceHalfOpen do to TryEnter, Record, RetryAfter and Snapshot, the
// RetryAfter 0 of a forced Open, fencing across a Force, the reset, and the
// override and generation every answer carries. A gate that does not implement gate.Forcer skips the
// suite with a message saying so. Subtests run in parallel, as in
// RunBreaker, with the same base policy and clock rules.
func RunBreakerForce(t *testing.T, newGate BreakerFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("%x%x", time.Now().UnixNano()&0xffffff, run)
	if g, _ := newGate(t, basePolicy()); !isForcer(g) {
		t.Skipf("skipped: %T does not implement gate.Forcer", g)
	}
	t.Run("BreakerForce", func(t *testing.T) {
		for _, c := range append(append(forceCases(), forceGenerationCases()...), forceHalfOpenCases()...) {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				p := basePolicy()
				if c.policy != nil {
					c.policy(&p)
				}
				require.NoError(t, p.Validate(), "contract suite built an invalid policy")
				g, clk := newGate(t, p)
				require.True(t, isForcer(g), "factory returned %T, which does not implement gate.Forcer", g)
				c.run(&breakerHarness{t: t, g: g, timing: timing{clk: clk}, p: p, src: sourceName(nonce, c.name, "")})
			})
		}
	})
}

func isForcer(g gate.ProviderGate) bool {
	_, ok := g.(gate.Forcer)
	return ok
}

func (h *breakerHarness) force(f gate.Force) { h.forceOn(h.src, f) }

func (h *breakerHarness) forceOn(src string, f gate.Force) {
	h.t.Helper()
	lo := h.begin()
	err := h.g.(gate.Forcer).Force(h.t.Context(), src, f)
	h.end(lo)
	require.NoError(h.t, err, "Force(%q, %v)", src, f)
}

// rejectedForcedOpen asserts the rejection of a forced Open: RetryAfter
// exactly 0, whatever the cooldown.
func (h *breakerHarness) rejectedForcedOpen(d gate.Decision) {
	h.t.Helper()
	assert.False(h.t, d.Allowed, "forced Open must reject: %+v", d)
	assert.False(h.t, d.Probe, "forced Open rejection: Probe")
	assert.Equal(h.t, gate.Open, d.State, "forced Open rejection: State")
	assert.Equal(h.t, time.Duration(0), d.RetryAfter, "forced Open rejection: RetryAfter is 0 (no certain end)")
}

// forcedOpenMiss asserts a Record under a forced Open: a miss, Open, 0.
func (h *breakerHarness) forcedOpenMiss(u gate.Update, what string) {
	h.t.Helper()
	assert.False(h.t, u.Applied, "%s under a forced Open: Applied", what)
	assert.Equal(h.t, gate.Open, u.State, "%s under a forced Open: State", what)
	assert.Equal(h.t, time.Duration(0), u.RetryAfter, "%s under a forced Open: RetryAfter", what)
}

func forceCases() []breakerCase {
	return []breakerCase{
		{name: "ForcedOpenRejectionRetryAfterIsZero", run: func(h *breakerHarness) {
			h.force(gate.ForceOpen)
			h.rejectedForcedOpen(h.enter())
			s := h.snap()
			assert.Equal(h.t, gate.Open, s.State)
			assert.Equal(h.t, gate.ForceOpen, s.Forced)
			assert.Equal(h.t, time.Duration(0), s.RetryAfter, "Snapshot of a forced Open: RetryAfter")
			assert.True(h.t, s.OpenUntil.IsZero(), "forced Open has no end, OpenUntil %v", s.OpenUntil)
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src), "RetryAfter of a forced Open")
		}},
		{name: "ForcedOpenOfATrippedSourceDropsItsCooldown", run: func(h *breakerHarness) {
			h.trip()
			h.force(gate.ForceOpen)
			h.rejectedForcedOpen(h.enter())
			// The minimum over sources includes the forced one's 0.
			h.tripOn(h.other("b"))
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src, h.other("b")))
		}},
		{name: "ForcedOpenNeverMovesToHalfOpen", run: func(h *breakerHarness) {
			h.force(gate.ForceOpen)
			h.advancePast(h.p.MaxCooldown)
			h.rejectedForcedOpen(h.enter())
			assert.Equal(h.t, gate.Open, h.snap().State)
			assert.Equal(h.t, 0, h.snap().ProbesInFlight)
		}},
		{name: "ForcedOpenFencesEveryOutcome", run: func(h *breakerHarness) {
			d := h.enter()
			h.admitted(d)
			h.force(gate.ForceOpen)
			for _, o := range []gate.Outcome{gate.Success, gate.Failure, gate.Released, gate.Fatal} {
				h.forcedOpenMiss(h.record(d, o), o.String())
			}
			s := h.snap()
			assert.Equal(h.t, gate.ForceOpen, s.Forced, "outcomes leave the override in place")
			assert.Equal(h.t, time.Duration(0), s.RetryAfter, "Fatal under a forced Open sets no cooldown")
		}},
		{name: "ForceOpenDropsProbeLeases", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			h.force(gate.ForceOpen)
			h.forcedOpenMiss(h.record(d, gate.Success), "probe success")
			assert.Equal(h.t, gate.Open, h.snap().State, "a probe granted before the override cannot close it")
		}},
		{name: "ForcedClosedAdmitsATrippedSource", run: func(h *breakerHarness) {
			h.trip()
			h.force(gate.ForceClosed)
			h.admitted(h.enter())
			s := h.snap()
			assert.Equal(h.t, gate.Closed, s.State)
			assert.Equal(h.t, gate.ForceClosed, s.Forced)
			assert.Equal(h.t, time.Duration(0), s.RetryAfter)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "forced Closed: Cooldown back to Policy.Cooldown")
		}},
		{name: "ForcedClosedCountsButNeverTrips", run: func(h *breakerHarness) {
			h.force(gate.ForceClosed)
			n := 2 * h.p.ConsecutiveFailures
			for i := range n {
				d := h.enter()
				h.admitted(d)
				u := h.record(d, gate.Failure)
				assert.True(h.t, u.Applied, "failure %d counted", i+1)
				assert.Equal(h.t, gate.Closed, u.State, "failure %d must not trip a forced Closed", i+1)
			}
			u := h.record(h.enter(), gate.Fatal)
			assert.True(h.t, u.Applied, "Fatal under a forced Closed is counted")
			assert.Equal(h.t, gate.Closed, u.State, "Fatal must not open a forced Closed")
			s := h.snap()
			assert.Equal(h.t, n+1, s.ConsecutiveFailures, "failures are counted (Fatal as one)")
			assert.Equal(h.t, gate.ForceClosed, s.Forced)
			h.record(h.enter(), gate.Success)
			assert.Equal(h.t, 0, h.snap().ConsecutiveFailures, "a success resets the count as in Closed")
		}},
		{name: "ForcedClosedIgnoresTheFailureRateWindow", policy: func(p *gate.Policy) {
			p.ConsecutiveFailures = 100
			p.Window = time.Second
			p.WindowMinCalls = 2
			p.WindowFailureRate = 0.5
		}, run: func(h *breakerHarness) {
			h.force(gate.ForceClosed)
			for range 4 {
				h.record(h.enter(), gate.Success)
				u := h.record(h.enter(), gate.Failure)
				assert.Equal(h.t, gate.Closed, u.State, "the window rule must not trip a forced Closed")
			}
			s := h.snap()
			assert.Equal(h.t, 8, s.WindowCalls, "the window still counts")
			assert.Equal(h.t, 4, s.WindowFailures)
		}},
		{name: "ForceStartsANewGenerationAndFencesOlderDecisions", run: func(h *breakerHarness) {
			before := h.snap().Generation
			d := h.enter()
			h.admitted(d)
			h.force(gate.ForceClosed)
			g1 := h.snap().Generation
			assert.Greater(h.t, g1, before, "Force must grow the generation")
			h.miss(h.record(d, gate.Failure), gate.Closed, moment{})
			assert.Equal(h.t, 0, h.snap().ConsecutiveFailures, "a decision from before the Force counts nothing")
			h.force(gate.ForceClosed)
			assert.Greater(h.t, h.snap().Generation, g1, "every Force grows the generation")
		}},
		{name: "ForceNoneResetsToAFreshClosedRecord", run: func(h *breakerHarness) {
			// Grow the cooldown: trip, fail the probe.
			h.trip()
			h.advancePast(h.p.Cooldown)
			d := h.enter()
			h.probe(d)
			h.record(d, gate.Failure)
			require.Equal(h.t, 2*h.p.Cooldown, h.snap().Cooldown, "precondition: grown cooldown")
			gen := h.snap().Generation

			h.force(gate.ForceNone)
			s := h.snap()
			assert.Equal(h.t, gate.Closed, s.State)
			assert.Equal(h.t, gate.ForceNone, s.Forced)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "reset: Cooldown back to Policy.Cooldown")
			assert.Equal(h.t, 0, s.ConsecutiveFailures)
			assert.True(h.t, s.OpenUntil.IsZero())
			assert.Greater(h.t, s.Generation, gen, "reset keeps generations growing")
			h.admitted(h.enter())
			// The policy runs again: it trips with the base cooldown.
			openUntil := h.trip()
			h.rejectedOpen(h.enter(), openUntil)
		}},
		{name: "ForceNoneReleasesAForcedOpen", run: func(h *breakerHarness) {
			h.force(gate.ForceOpen)
			h.rejectedForcedOpen(h.enter())
			h.force(gate.ForceNone)
			h.admitted(h.enter())
			assert.Equal(h.t, gate.ForceNone, h.snap().Forced)
		}},
		{name: "ForceNoneReleasesAForcedClosed", run: func(h *breakerHarness) {
			h.force(gate.ForceClosed)
			h.force(gate.ForceNone)
			openUntil := h.trip()
			h.rejectedOpen(h.enter(), openUntil)
		}},
		{name: "ForceOfAnUnknownValueIsAnErrorAndChangesNothing", run: func(h *breakerHarness) {
			before := h.snap()
			err := h.g.(gate.Forcer).Force(h.t.Context(), h.src, gate.Force(9))
			require.Error(h.t, err)
			var fe *gate.ForceError
			assert.ErrorAs(h.t, err, &fe)
			after := h.snap()
			assert.Equal(h.t, before.Generation, after.Generation)
			assert.Equal(h.t, gate.ForceNone, after.Forced)
		}},
	}
}
