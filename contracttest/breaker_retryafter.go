package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// retryAfterCases pin every row of the RetryAfter table in gate/doc.go.
func retryAfterCases() []breakerCase {
	return []breakerCase{
		{name: "TryEnterAllowedClosedRetryAfterIsZero", run: func(h *breakerHarness) {
			d := h.enter()
			h.admitted(d)
			// Token = the current generation for a Closed admission.
			assert.Equal(h.t, h.snap().Generation, d.Token, "Closed admission: Token is the generation")
		}},
		{name: "ProbeGrantRetryAfterIsZero", run: func(h *breakerHarness) {
			d := h.toHalfOpen()
			assert.Equal(h.t, time.Duration(0), d.RetryAfter)
		}},
		{name: "OpenRejectionRetryAfterIsOpenUntilMinusNow", run: func(h *breakerHarness) {
			openUntil := h.trip()
			h.rejectedOpen(h.enter(), openUntil)
			h.clk.Advance(50 * time.Millisecond)
			d := h.enter()
			h.rejectedOpen(d, openUntil)
			h.near(h.p.Cooldown-50*time.Millisecond, d.RetryAfter, "Open rejection 50ms into a 200ms cooldown")
		}},
		{name: "HalfOpenRejectionRetryAfterIsZero", run: func(h *breakerHarness) {
			h.toHalfOpen()
			h.rejectedHalfOpen(h.enter())
			// Still 0 later in the lease, never what is left of it.
			h.clk.Advance(h.p.ProbeTTL / 2)
			h.rejectedHalfOpen(h.enter())
		}},
		{name: "RecordAppliedClosedRetryAfterIsZero", run: func(h *breakerHarness) {
			u := h.record(h.enter(), gate.Failure)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State)
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
			u = h.record(h.enter(), gate.Success)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Closed, u.State)
			assert.Equal(h.t, time.Duration(0), u.RetryAfter)
		}},
		{name: "RecordAppliedOpenRetryAfterIsOpenUntilMinusNow", run: func(h *breakerHarness) {
			for range h.p.ConsecutiveFailures - 1 {
				h.record(h.enter(), gate.Failure)
			}
			u := h.record(h.enter(), gate.Failure)
			assert.True(h.t, u.Applied)
			assert.Equal(h.t, gate.Open, u.State)
			h.near(h.p.Cooldown, u.RetryAfter, "tripping Failure: RetryAfter = openUntil − now = Cooldown")
		}},
		{name: "RecordFencingMissInHalfOpenRetryAfterIsZero", run: func(h *breakerHarness) {
			stale := h.enter()
			h.admitted(stale)
			h.toHalfOpen()
			h.miss(h.record(stale, gate.Success), gate.HalfOpen, time.Time{})
			h.miss(h.record(stale, gate.Failure), gate.HalfOpen, time.Time{})
			h.miss(h.record(stale, gate.Released), gate.HalfOpen, time.Time{})
			assert.Equal(h.t, gate.HalfOpen, h.snap().State)
		}},
		{name: "RecordFencingMissInOpenRetryAfterIsOpenUntilMinusNow", run: func(h *breakerHarness) {
			stale := h.enter()
			h.admitted(stale)
			openUntil := h.trip()
			h.clk.Advance(50 * time.Millisecond)
			u := h.record(stale, gate.Success)
			h.miss(u, gate.Open, openUntil)
			h.near(h.p.Cooldown-50*time.Millisecond, u.RetryAfter, "fencing miss 50ms into a 200ms cooldown")
			h.miss(h.record(stale, gate.Failure), gate.Open, openUntil)
		}},
		{name: "RetryAfterSourcesIsMinimum", run: func(h *breakerHarness) {
			a, b := h.other("a"), h.other("b")
			untilA := h.tripOn(a)
			h.clk.Advance(100 * time.Millisecond)
			untilB := h.tripOn(b)
			now := h.clk.Now()
			h.near(untilA.Sub(now), h.retryAfter(a, b), "RetryAfter(a, b)")
			h.near(untilA.Sub(now), h.retryAfter(b, a), "RetryAfter(b, a)")
			h.near(untilB.Sub(now), h.retryAfter(b), "RetryAfter(b)")
			h.near(untilA.Sub(now), h.retryAfter(a, a), "a source listed twice")
		}},
		{name: "RetryAfterSourcesCountsHalfOpenAsZero", run: func(h *breakerHarness) {
			open := h.other("open")
			h.toHalfOpen()
			h.tripOn(open)
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src), "HalfOpen source alone")
			assert.Equal(h.t, time.Duration(0), h.retryAfter(open, h.src), "Open and HalfOpen")
			// The lease does not leak into RetryAfter even with no free slot.
			h.rejectedHalfOpen(h.enter())
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src, open))
		}},
		{name: "RetryAfterSourcesUnknownSourceIsClosedZero", run: func(h *breakerHarness) {
			open := h.other("open")
			h.tripOn(open)
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.other("never-seen")), "unknown source")
			assert.Equal(h.t, time.Duration(0), h.retryAfter(open, h.other("never-seen")), "Open and unknown")
			s := h.snapOn(h.other("never-seen"))
			assert.Equal(h.t, gate.Closed, s.State, "unknown source reads as Closed")
		}},
		{name: "RetryAfterSourcesEmptyListIsZero", run: func(h *breakerHarness) {
			h.trip()
			assert.Equal(h.t, time.Duration(0), h.retryAfter(), "empty list")
			ra, err := h.g.RetryAfter(h.t.Context(), nil)
			require.NoError(h.t, err, "RetryAfter(nil)")
			assert.Equal(h.t, time.Duration(0), ra, "nil list")
		}},
		{name: "RetryAfterSourcesNeverNegative", run: func(h *breakerHarness) {
			h.trip()
			// Cooldown passed but nobody called TryEnter: the record is still
			// Open, its openUntil in the past; RetryAfter clamps to 0.
			h.advancePast(h.p.Cooldown + 100*time.Millisecond)
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src))
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src, h.other("closed")))
			// RetryAfter moves no state.
			assert.Equal(h.t, gate.Open, h.snap().State, "RetryAfter must not move the record")
		}},
	}
}
