package modelcheck

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pgw-go/pgw/gate"
)

// Kind is the operation of a breaker Step.
type Kind uint8

// The operations of a breaker sequence.
const (
	// KindEnter is TryEnter(Source); the decision is kept under ID.
	KindEnter Kind = iota + 1
	// KindRecord is Record(Source, decision ID, Outcome), or, when ID is 0,
	// Record(Source, Forged, Outcome).
	KindRecord
	// KindAdvance moves time forward by Ms milliseconds.
	KindAdvance
	// KindSnapshot is Snapshot(Source).
	KindSnapshot
	// KindRetryAfter is RetryAfter(Sources).
	KindRetryAfter
	// KindForce is the operator override Force(Source, Force) of
	// gate.Forcer.
	KindForce
	// KindAcquire is the quota gate's Acquire(Source, Tokens); the permit
	// is kept under ID.
	KindAcquire
	// KindSettle is Settle(permit ID, Actual), or, when ID is 0, Settle of a
	// forged permit {Source, Tokens} (no in-flight lease).
	KindSettle
	// KindRelease is Release(permit ID), or of the zero Permit when ID is 0.
	KindRelease
)

// Step is one operation of a breaker or quota sequence. Build steps with
// Enter, Record, RecordForged, Snap, RetryAfterOf and Force (breaker), Acquire,
// Settle, SettleForged and Release (quota), and Advance (both); a Step prints
// itself as that call (GoString), so a shrunk sequence pastes into a test.
type Step struct {
	// Kind is the operation.
	Kind Kind
	// Source is the source the operation is on.
	Source string
	// Sources are the sources of a RetryAfter step.
	Sources []string
	// ID names a decision or a permit: the one an Enter or Acquire step
	// obtains, or the one a Record, Settle or Release step uses (0 for a
	// forged one).
	ID int
	// Outcome is a Record step's outcome.
	Outcome gate.Outcome
	// Forged is the decision a Record step with ID 0 hands to both gates: a
	// token made up by the test rather than obtained from TryEnter.
	Forged gate.Decision
	// Ms is an Advance step's duration in whole milliseconds (Redis keeps
	// milliseconds in key TTLs and window buckets).
	Ms int64
	// Tokens is an Acquire step's estimate, or a forged permit's.
	Tokens int64
	// Actual is a Settle step's actual token count.
	Actual int64
	// Force is a Force step's override.
	Force gate.Force
}

// Enter is TryEnter(source), its decision kept as decision id (id ≥ 1).
func Enter(source string, id int) Step { return Step{Kind: KindEnter, Source: source, ID: id} }

// Record is Record(source, decision id, o). The decision may come from
// another source (a foreign decision) or be stale; both are legal tests.
func Record(source string, id int, o gate.Outcome) Step {
	return Step{Kind: KindRecord, Source: source, ID: id, Outcome: o}
}

// RecordForged is Record(source, d, o) with a made-up decision d.
func RecordForged(source string, d gate.Decision, o gate.Outcome) Step {
	return Step{Kind: KindRecord, Source: source, Forged: d, Outcome: o}
}

// Advance moves time forward by ms milliseconds.
func Advance(ms int64) Step { return Step{Kind: KindAdvance, Ms: ms} }

// Snap is Snapshot(source), compared field by field.
func Snap(source string) Step { return Step{Kind: KindSnapshot, Source: source} }

// RetryAfterOf is RetryAfter(sources).
func RetryAfterOf(sources ...string) Step {
	return Step{Kind: KindRetryAfter, Sources: sources}
}

// Force is the operator override Force(source, f) (gate.Forcer).
func Force(source string, f gate.Force) Step { return Step{Kind: KindForce, Source: source, Force: f} }

// Acquire is the quota gate's Acquire(source, est), its permit kept as
// permit id (id ≥ 1).
func Acquire(source string, id int, est int64) Step {
	return Step{Kind: KindAcquire, Source: source, ID: id, Tokens: est}
}

// Settle is Settle(permit id, actual).
func Settle(id int, actual int64) Step { return Step{Kind: KindSettle, ID: id, Actual: actual} }

// SettleForged is Settle(gate.Permit{Source: source, Tokens: est}, actual): a
// permit the gate never granted, which Settle accepts all the same (it only
// corrects the source's token account).
func SettleForged(source string, est, actual int64) Step {
	return Step{Kind: KindSettle, Source: source, Tokens: est, Actual: actual}
}

// Release is Release(permit id); id 0 releases the zero Permit.
func Release(id int) Step { return Step{Kind: KindRelease, ID: id} }

// GoString renders s as the constructor call that builds it.
func (s Step) GoString() string {
	switch s.Kind {
	case KindEnter:
		return fmt.Sprintf("Enter(%q, %d)", s.Source, s.ID)
	case KindRecord:
		if s.ID == 0 {
			return fmt.Sprintf("RecordForged(%q, gate.Decision{Allowed: %t, State: %s, Probe: %t, Token: %d}, %s)",
				s.Source, s.Forged.Allowed, stateExpr(s.Forged.State), s.Forged.Probe, s.Forged.Token, outcomeExpr(s.Outcome))
		}
		return fmt.Sprintf("Record(%q, %d, %s)", s.Source, s.ID, outcomeExpr(s.Outcome))
	case KindAdvance:
		return fmt.Sprintf("Advance(%d)", s.Ms)
	case KindSnapshot:
		return fmt.Sprintf("Snap(%q)", s.Source)
	case KindRetryAfter:
		q := make([]string, len(s.Sources))
		for i, src := range s.Sources {
			q[i] = strconv.Quote(src)
		}
		return "RetryAfterOf(" + strings.Join(q, ", ") + ")"
	case KindForce:
		return fmt.Sprintf("Force(%q, %s)", s.Source, forceExpr(s.Force))
	case KindAcquire:
		return fmt.Sprintf("Acquire(%q, %d, %d)", s.Source, s.ID, s.Tokens)
	case KindSettle:
		if s.ID == 0 {
			return fmt.Sprintf("SettleForged(%q, %d, %d)", s.Source, s.Tokens, s.Actual)
		}
		return fmt.Sprintf("Settle(%d, %d)", s.ID, s.Actual)
	case KindRelease:
		return fmt.Sprintf("Release(%d)", s.ID)
	}
	return fmt.Sprintf("Step{Kind: %d}", s.Kind)
}

func stateExpr(s gate.State) string {
	switch s {
	case gate.Closed:
		return "gate.Closed"
	case gate.Open:
		return "gate.Open"
	case gate.HalfOpen:
		return "gate.HalfOpen"
	}
	return fmt.Sprintf("gate.State(%d)", uint8(s))
}

func forceExpr(f gate.Force) string {
	switch f {
	case gate.ForceNone:
		return "gate.ForceNone"
	case gate.ForceOpen:
		return "gate.ForceOpen"
	case gate.ForceClosed:
		return "gate.ForceClosed"
	}
	return fmt.Sprintf("gate.Force(%d)", uint8(f))
}

func outcomeExpr(o gate.Outcome) string {
	switch o {
	case gate.Success:
		return "gate.Success"
	case gate.Failure:
		return "gate.Failure"
	case gate.Fatal:
		return "gate.Fatal"
	case gate.Released:
		return "gate.Released"
	}
	return fmt.Sprintf("gate.Outcome(%d)", uint8(o))
}

// Normalize tidies a sequence after steps were dropped: a Record (Settle,
// Release) whose decision's Enter (permit's Acquire) step is gone is dropped
// too, adjacent advances merge into
// one (time moved in two jumps or one is the same), zero advances vanish, and
// decision ids are renumbered 1, 2, … in order of appearance. It returns a
// new slice.
func Normalize(steps []Step) []Step {
	out := make([]Step, 0, len(steps))
	rename := map[int]int{}
	for _, s := range steps {
		switch s.Kind {
		case KindEnter, KindAcquire:
			rename[s.ID] = len(rename) + 1
			s.ID = rename[s.ID]
		case KindRecord, KindSettle, KindRelease:
			if s.ID != 0 {
				id, ok := rename[s.ID]
				if !ok {
					continue
				}
				s.ID = id
			}
		case KindAdvance:
			if s.Ms <= 0 {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Kind == KindAdvance {
				out[n-1].Ms += s.Ms
				continue
			}
		case KindRetryAfter:
			s.Sources = append([]string(nil), s.Sources...)
		}
		out = append(out, s)
	}
	return out
}

// Format renders steps as Go lines, one per step, each indented by indent and
// followed by a comma: the body of a []Step literal.
func Format(steps []Step, indent string) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(indent)
		b.WriteString(s.GoString())
		b.WriteString(",\n")
	}
	return b.String()
}
