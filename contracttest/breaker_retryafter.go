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
			// 50ms into the 200ms cooldown: 150ms on a fake clock, at most
			// that on real time (the bracket bounds it by 150ms from above).
			h.clk.Advance(50 * time.Millisecond)
			h.rejectedOpen(h.enter(), openUntil)
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
			h.opened(h.p.Cooldown, u.RetryAfter, "tripping Failure: RetryAfter = openUntil − now = Cooldown")
		}},
		{name: "RecordFencingMissInHalfOpenRetryAfterIsZero", run: func(h *breakerHarness) {
			stale := h.enter()
			h.admitted(stale)
			h.toHalfOpen()
			h.miss(h.record(stale, gate.Success), gate.HalfOpen, moment{})
			h.miss(h.record(stale, gate.Failure), gate.HalfOpen, moment{})
			h.miss(h.record(stale, gate.Released), gate.HalfOpen, moment{})
			assert.Equal(h.t, gate.HalfOpen, h.snap().State)
		}},
		{name: "RecordFencingMissInOpenRetryAfterIsOpenUntilMinusNow", run: func(h *breakerHarness) {
			stale := h.enter()
			h.admitted(stale)
			openUntil := h.trip()
			// 50ms into the 200ms cooldown: the miss reports what is left.
			h.clk.Advance(50 * time.Millisecond)
			h.miss(h.record(stale, gate.Success), gate.Open, openUntil)
			h.miss(h.record(stale, gate.Failure), gate.Open, openUntil)
		}},
		{name: "RetryAfterSourcesIsMinimum", run: func(h *breakerHarness) {
			a, b := h.other("a"), h.other("b")
			untilA := h.tripOn(a)
			h.clk.Advance(100 * time.Millisecond)
			untilB := h.tripOn(b)
			for _, c := range []struct {
				sources []string
				until   moment
				what    string
			}{
				{[]string{a, b}, untilA, "RetryAfter(a, b)"},
				{[]string{b, a}, untilA, "RetryAfter(b, a)"},
				{[]string{b}, untilB, "RetryAfter(b)"},
				{[]string{a, a}, untilA, "a source listed twice"},
			} {
				ra := h.retryAfter(c.sources...)
				h.remaining(c.until, ra, c.what)
			}
		}},
		{name: "RetryAfterSourcesCountsHalfOpenAsZero", policy: longLease, run: func(h *breakerHarness) {
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
			openUntil := h.trip()
			// Cooldown passed but nobody called TryEnter: the record is still
			// Open, its openUntil in the past; RetryAfter clamps to 0.
			h.advanceTo(openUntil.add(100 * time.Millisecond))
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src))
			assert.Equal(h.t, time.Duration(0), h.retryAfter(h.src, h.other("closed")))
			// RetryAfter moves no state.
			assert.Equal(h.t, gate.Open, h.snap().State, "RetryAfter must not move the record")
		}},
	}
}
