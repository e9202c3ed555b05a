package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// snapshotCases pin what Snapshot reports in each state.
func snapshotCases() []breakerCase {
	return []breakerCase{
		{name: "SnapshotOfUnknownSourceIsClosed", run: func(h *breakerHarness) {
			s := h.snap()
			assert.Equal(h.t, gate.Closed, s.State)
			assert.Equal(h.t, 0, s.ConsecutiveFailures)
			assert.Equal(h.t, 0, s.ProbeSuccesses)
			assert.Equal(h.t, 0, s.ProbesInFlight)
			assert.Equal(h.t, 0, s.WindowCalls)
			assert.Equal(h.t, 0, s.WindowFailures)
			assert.True(h.t, s.OpenUntil.IsZero(), "OpenUntil is zero unless Open, got %v", s.OpenUntil)
			assert.Equal(h.t, time.Duration(0), s.RetryAfter)
			// Assumption (gate/doc.go: "the cooldown the next Open phase
			// uses"): an unknown source reads as a fresh record, whose next
			// Open phase would use Policy.Cooldown.
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown, "unknown source: Cooldown is Policy.Cooldown")
		}},
		{name: "SnapshotReportsStateCountsCooldownOpenUntilRetryAfter", run: func(h *breakerHarness) {
			h.record(h.enter(), gate.Failure)
			h.record(h.enter(), gate.Failure)
			s := h.snap()
			assert.Equal(h.t, gate.Closed, s.State)
			assert.Equal(h.t, 2, s.ConsecutiveFailures)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown)
			assert.True(h.t, s.OpenUntil.IsZero(), "Closed: OpenUntil, got %v", s.OpenUntil)
			assert.Equal(h.t, time.Duration(0), s.RetryAfter)

			h.record(h.enter(), gate.Failure)
			openUntil := h.last.add(h.p.Cooldown)
			s = h.snap()
			assert.Equal(h.t, gate.Open, s.State)
			assert.Equal(h.t, h.p.Cooldown, s.Cooldown)
			h.withinTime(h.t, openUntil, s.OpenUntil, "Open: OpenUntil = trip + Cooldown")
			h.remaining(openUntil, s.RetryAfter, "Open: RetryAfter = openUntil − now")
			h.remaining(at(s.OpenUntil), s.RetryAfter, "Open: RetryAfter = the reported OpenUntil − now")
			h.clk.Advance(50 * time.Millisecond)
			s = h.snap()
			h.remaining(openUntil, s.RetryAfter, "Open, 50ms in: RetryAfter")
			h.remaining(at(s.OpenUntil), s.RetryAfter, "Open, 50ms in: RetryAfter = the reported OpenUntil − now")

			// Cooldown passed, nobody called TryEnter: still Open, RetryAfter 0.
			h.advanceTo(openUntil)
			s = h.snap()
			assert.Equal(h.t, gate.Open, s.State, "Snapshot must not move Open to HalfOpen")
			assert.Equal(h.t, time.Duration(0), s.RetryAfter, "Open whose cooldown passed reports RetryAfter 0")
			h.withinTime(h.t, openUntil, s.OpenUntil, "OpenUntil still reported after it passed")

			h.probe(h.enter())
			s = h.snap()
			assert.Equal(h.t, gate.HalfOpen, s.State)
			assert.Equal(h.t, 1, s.ProbesInFlight)
			assert.Equal(h.t, 0, s.ProbeSuccesses)
			assert.Equal(h.t, time.Duration(0), s.RetryAfter, "HalfOpen: RetryAfter 0, never the lease length")
			assert.True(h.t, s.OpenUntil.IsZero(), "HalfOpen: OpenUntil, got %v", s.OpenUntil)
		}},
		{name: "GenerationGrowsOnEveryTransition", run: func(h *breakerHarness) {
			gens := []uint64{h.snap().Generation}
			observe := func(want gate.State) {
				s := h.snap()
				require.Equal(h.t, want, s.State)
				assert.Greater(h.t, s.Generation, gens[len(gens)-1], "transition to %v must grow the generation", want)
				gens = append(gens, s.Generation)
			}
			openUntil := h.trip()
			observe(gate.Open)
			h.advanceTo(openUntil)
			d := h.enter()
			h.probe(d)
			observe(gate.HalfOpen)
			h.record(d, gate.Failure)
			openUntil = h.last.add(2 * h.p.Cooldown)
			observe(gate.Open)
			h.advanceTo(openUntil)
			d = h.enter()
			h.probe(d)
			observe(gate.HalfOpen)
			h.record(d, gate.Success)
			observe(gate.Closed)
			d = h.enter()
			h.admitted(d)
			assert.Equal(h.t, gens[len(gens)-1], d.Token, "a Closed admission carries the current generation")
		}},
	}
}
