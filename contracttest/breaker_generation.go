package contracttest

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// generationCases pin the Generations section of gate/doc.go: every
// Decision and Update carries the record's generation and override at the
// instant of the answer — what a Snapshot read right after reports, since
// nothing but a TryEnter or Record moves a record — and the generation
// grows exactly when the state changes. A caller (admission's watch) orders
// answers by it instead of reading the record. On a shared store (Redis) the
// snapshot is read by another connection, so the suite also pins that every
// process sees one sequence.
func generationCases() []breakerCase {
	return []breakerCase{
		{name: "AnswersCarryTheRecordsGenerationThroughEveryTransition", run: func(h *breakerHarness) {
			g := h.genTrail()
			d := h.enter()
			h.admitted(d)
			assert.Equal(h.t, d.Token, d.Generation, "Closed admission: Generation is the token")
			g.decision("Closed admission", d)
			g.update("Closed success", h.record(d, gate.Success))
			for range h.p.ConsecutiveFailures {
				d = h.enter()
				g.decision("Closed admission", d)
				g.update("Closed failure", h.record(d, gate.Failure))
			}
			require.Equal(h.t, gate.Open, g.state, "the failures trip the record")
			g.decision("Open rejection", h.enter())
			g.update("stale Closed outcome (fencing miss, Open)", h.record(d, gate.Success))

			h.advancePast(h.p.Cooldown)
			probe := h.enter()
			h.probe(probe)
			g.decision("probe grant", probe)
			g.decision("HalfOpen rejection", h.enter())
			g.update("probe failure", h.record(probe, gate.Failure))
			require.Equal(h.t, gate.Open, g.state, "a failed probe re-opens")
			g.update("stale probe outcome (fencing miss, Open)", h.record(probe, gate.Success))

			h.advancePast(2 * h.p.Cooldown) // the grown cooldown
			probe = h.enter()
			h.probe(probe)
			g.decision("probe grant", probe)
			g.update("probe success", h.record(probe, gate.Success))
			require.Equal(h.t, gate.Closed, g.state, "a probe success closes")
			g.update("stale probe outcome (fencing miss, Closed)", h.record(probe, gate.Failure))

			d = h.enter()
			g.decision("Closed admission", d)
			g.update("Fatal", h.record(d, gate.Fatal))
			require.Equal(h.t, gate.Open, g.state, "Fatal opens")
			g.update("Fatal while Open (no transition)", h.record(d, gate.Fatal))
			g.decision("Open rejection", h.enter())
		}},
		{name: "ReleasedAndLeaseGrantsKeepTheGeneration", policy: func(p *gate.Policy) { p.HalfOpenProbes = 2 }, run: func(h *breakerHarness) {
			g := h.genTrail()
			d := h.enter()
			g.decision("Closed admission", d)
			g.update("Closed released", h.record(d, gate.Released))
			h.trip()
			h.advancePast(h.p.Cooldown)
			p1 := h.enter()
			h.probe(p1)
			g.decision("first probe grant", p1)
			p2 := h.enter()
			h.probe(p2)
			g.decision("second probe grant", p2)
			assert.Equal(h.t, p1.Generation, p2.Generation, "leases of one HalfOpen phase share its generation")
			g.update("probe released", h.record(p1, gate.Released))
			g.update("probe released", h.record(p2, gate.Released))
		}},
	}
}

// forceGenerationCases pin that answers carry the operator's override
// (Decision.Forced, Update.Forced) and that every Force is a new generation
// the answers after it report.
func forceGenerationCases() []breakerCase {
	return []breakerCase{
		{name: "AnswersCarryTheOverrideAndItsGeneration", run: func(h *breakerHarness) {
			g := h.genTrail()
			d := h.enter()
			g.decision("Closed admission", d)

			h.force(gate.ForceOpen)
			g.afterForce("ForceOpen")
			r := h.enter()
			h.rejectedForcedOpen(r)
			assert.Equal(h.t, gate.ForceOpen, r.Forced, "forced Open rejection: Forced")
			g.decision("forced Open rejection", r)
			u := h.record(d, gate.Fatal)
			assert.Equal(h.t, gate.ForceOpen, u.Forced, "Record under a forced Open: Forced")
			g.update("Record under a forced Open", u)

			h.force(gate.ForceClosed)
			g.afterForce("ForceClosed")
			d = h.enter()
			h.admitted(d)
			assert.Equal(h.t, gate.ForceClosed, d.Forced, "forced Closed admission: Forced")
			g.decision("forced Closed admission", d)
			u = h.record(d, gate.Success)
			assert.Equal(h.t, gate.ForceClosed, u.Forced, "Record under a forced Closed: Forced")
			g.update("success under a forced Closed", u)
			g.update("failure under a forced Closed", h.record(h.enter(), gate.Failure))

			h.force(gate.ForceNone)
			g.afterForce("ForceNone")
			d = h.enter()
			assert.Equal(h.t, gate.ForceNone, d.Forced, "after the reset: Forced")
			g.decision("Closed admission after the reset", d)
			g.update("success after the reset", h.record(d, gate.Success))
		}},
	}
}

// genTrail follows one source's answers: each must report the record as a
// Snapshot read right after it does, and its generation must grow exactly
// when the state or override changed since the previous answer.
type genTrail struct {
	h      *breakerHarness
	gen    uint64
	state  gate.State
	forced gate.Force
}

func (h *breakerHarness) genTrail() *genTrail {
	h.t.Helper()
	s := h.snap()
	return &genTrail{h: h, gen: s.Generation, state: s.State, forced: s.Forced}
}

func (g *genTrail) decision(what string, d gate.Decision) {
	g.h.t.Helper()
	g.next(what, d.Generation, d.State, d.Forced)
}

func (g *genTrail) update(what string, u gate.Update) {
	g.h.t.Helper()
	g.next(what, u.Generation, u.State, u.Forced)
}

// afterForce follows a Force, which the answers after it must show as a new
// generation.
func (g *genTrail) afterForce(what string) {
	g.h.t.Helper()
	s := g.h.snap()
	assert.Greater(g.h.t, s.Generation, g.gen, "%s: every Force is a new generation", what)
	g.gen, g.state, g.forced = s.Generation, s.State, s.Forced
}

func (g *genTrail) next(what string, gen uint64, st gate.State, f gate.Force) {
	h := g.h
	h.t.Helper()
	s := h.snap()
	assert.Equal(h.t, s.Generation, gen, "%s: Generation is the record's (Snapshot right after)", what)
	assert.Equal(h.t, s.State, st, "%s: State is the record's", what)
	assert.Equal(h.t, s.Forced, f, "%s: Forced is the record's override", what)
	if st != g.state || f != g.forced {
		assert.Greater(h.t, gen, g.gen, "%s: %v → %v must be a new generation", what, g.state, st)
	} else {
		assert.Equal(h.t, g.gen, gen, "%s: no transition, same generation (%v)", what, st)
	}
	g.gen, g.state, g.forced = gen, st, f
}
