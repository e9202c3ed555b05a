package admission

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pgw-go/pgw/gate"
)

// Ticket is what Pick hands the winning source: its breaker decision (a probe
// lease when Decision.Probe), its quota permit and its pacer slot. Done gives
// them all back, exactly once; call it from a defer so that a panic in the
// attempt leaks nothing. Safe for concurrent use (Done is idempotent).
type Ticket struct {
	// Source is the admitted source's name.
	Source string
	// Decision is the breaker's admission.
	Decision gate.Decision
	// Skipped are the sources tried before Source in the same round, with
	// why each was not admitted.
	Skipped Rejections

	a         *SourceAdmission
	idx       int // Source's index in the selector
	permit    gate.Permit
	hasPermit bool
	paced     bool
	ordered   bool   // its outcome, in the writer, holds Pick back (probeWait)
	seq       uint64 // its number among the source's such outcomes (probeWait)
	slotted   bool   // its outcome, in the writer, frees an in-flight slot or refunds tokens (slotWait)
	done      atomic.Bool
	sib       *Siblings // the split call's parts, told when it is given back; nil: none
}

// Done reports the attempt's result and gives back everything the ticket
// holds: it records r.Outcome with the breaker (which frees a probe lease),
// settles the permit to r.Tokens and releases it, and returns the pacer slot
// with the outcome's pacing verdict.
// Only the first call acts; later calls return nil.
//
// With a Writer (Config.Writer) the breaker and quota give-back is queued to
// it and Done returns at once, whatever ctx says: the writer writes it with
// its own bounded timeout, so neither a cancelled call nor a slow store keeps
// the caller past its deadline. Done then returns an error wrapping
// ErrWriterFull only when the outcome was dropped. Without a Writer the
// gates are called here with ctx itself — for gates that live in the process
// and never block (memory, noop); a gate that does I/O gives back only
// within ctx's deadline that way, so give it a Writer. Every step runs even
// when an earlier one fails; the failures are logged and returned joined.
func (t *Ticket) Done(ctx context.Context, r Result) error {
	if !t.done.CompareAndSwap(false, true) {
		return nil
	}
	if t.sib != nil {
		defer t.sib.giveBack() // once the slot is back, or queued to come back
	}
	a := t.a
	a.lat.end(t.idx)
	if t.paced {
		a.pacer.Release(t.Source, paceOutcome(r.Outcome, r.Throttled))
	}
	if a.writer == nil {
		return t.giveBackNow(ctx, r)
	}
	if t.local() {
		// Nothing to write to a store: the gates' local fallbacks granted
		// both, so giving back here costs less than a hand-off.
		return t.giveBackNow(context.WithoutCancel(ctx), r)
	}
	o := r.Outcome
	if t.Decision.Probe || o == gate.Failure || o == gate.Fatal {
		// An outcome that may move the breaker: this admission asks about
		// the source again only once it is written.
		t.ordered = true
		a.probeQueued(t)
	}
	if t.leased() || t.refunds(r) {
		// Its slot, or the tokens it gives back, come back once it is
		// written: an admission refused the source's slots or tokens
		// meanwhile waits for that (Pick).
		t.slotted = true
		a.slotQueued(t)
	}
	if a.writer.put(context.WithoutCancel(ctx), t, r) {
		return nil
	}
	a.probeWritten(t)
	a.slotWritten(t)
	return fmt.Errorf("pgw/admission: scope %q: giving back source %q: %w", a.scope, t.Source, ErrWriterFull)
}

// leased reports whether the ticket's permit holds an in-flight lease (the
// source has a MaxInFlight): its release is what this process's next call
// of the source may be waiting for.
func (t *Ticket) leased() bool {
	return t.hasPermit && (t.permit.ID != "" || t.permit.Lease != 0)
}

// refunds reports whether r gives back part of the ticket's token
// reservation (it used fewer tokens than the estimate): its settlement is
// what this process's next call of the source may be refused tokens for.
func (t *Ticket) refunds(r Result) bool {
	return t.hasPermit && r.Tokens >= 0 && r.Tokens < t.permit.Tokens
}

// giveBackNow records the outcome with the breaker and gives the permit
// back, both under ctx, then tells the observer: a give-back on the
// caller's goroutine (no writer, or local gates).
func (t *Ticket) giveBackNow(ctx context.Context, r Result) error {
	a := t.a
	o, u, recorded, err := t.giveBackGates(ctx, r, false)
	if recorded {
		// The observer last: it may itself start a call that asks for the
		// source, and must find the breaker and the slot given back.
		a.w.afterRecord(ctx, t.idx, o, u)
	}
	if err != nil && a.writer == nil {
		a.log.Warn("pgw: giving back an admission failed", "scope", a.scope, "source", t.Source, "err", err)
	}
	return err
}

// giveBackGates records the outcome with the breaker and gives the permit
// back, both under ctx, and returns the outcome recorded, the breaker's
// answer and whether there is one (recorded: the observer is to hear of
// it; the caller tells it). written: the writer writes it, and the
// admission's next question about the source waits for the Record and the
// Finish only — not for the observer, which may itself ask (a callback that
// starts a call).
func (t *Ticket) giveBackGates(ctx context.Context, r Result, written bool) (gate.Outcome, gate.Update, bool, error) {
	a := t.a
	o := r.Outcome
	if !o.Valid() {
		o = gate.Released
	}
	var errRecord, errPermit error
	u, err := a.breaker.Record(ctx, t.Source, t.Decision, o)
	if written {
		a.probeWritten(t)
	}
	if t.hasPermit {
		// Settled and released together: one round trip on Redis.
		if err := a.finish(ctx, &t.permit, r.Tokens); err != nil {
			errPermit = fmt.Errorf("give back permit: %w", err)
		}
	}
	if written {
		a.slotWritten(t)
	} else if t.leased() || t.refunds(r) {
		a.slots[t.idx].done.Add(1) // the slot or tokens are back: a round they refused may ask again
	}
	if err != nil {
		errRecord = fmt.Errorf("record %s: %w", o, err)
	}
	if errRecord == nil && errPermit == nil {
		return o, u, true, nil
	}
	return o, u, errRecord == nil, fmt.Errorf("pgw/admission: scope %q: giving back source %q: %w",
		a.scope, t.Source, errors.Join(errRecord, errPermit))
}

// finish is gate.Finish on the admission's quota gate, with the gate's
// Finish found once, when the admission was built, rather than per call.
func (a *SourceAdmission) finish(ctx context.Context, p *gate.Permit, tokens int64) error {
	if a.finisher != nil && tokens >= 0 {
		return a.finisher.Finish(ctx, *p, tokens)
	}
	return gate.Finish(ctx, a.quota, *p, tokens)
}

// paceOutcome is what an attempt's result says about upstream capacity.
func paceOutcome(o gate.Outcome, throttled bool) PaceOutcome {
	switch {
	case throttled:
		return PaceThrottled
	case o == gate.Success:
		return PaceSuccess
	}
	return PaceNeutral
}

// LocalDecider is implemented by a breaker gate that can tell a decision
// its in-process fallback granted (a Redis failover gate during an outage):
// recording it does no I/O.
type LocalDecider interface {
	// LocalDecision reports whether d was granted without the shared store.
	LocalDecision(d gate.Decision) bool
}

// Degrader is implemented by a breaker gate whose shared store can be out
// (a Redis failover gate): during such an outage it decides from a local
// fallback, or fails at once, without asking the store.
type Degrader interface {
	// Degraded reports whether an outage of the store is in progress.
	Degraded() bool
}

// LocalPermitter is implemented by a quota gate that can tell a permit its
// in-process fallback granted: giving it back does no I/O.
type LocalPermitter interface {
	// LocalPermit reports whether p was granted without the shared store.
	LocalPermit(p gate.Permit) bool
}

// local reports whether the ticket's decision and permit were both granted
// by in-process gates, so that giving them back needs no writer.
func (t *Ticket) local() bool {
	ld, ok := t.a.breaker.(LocalDecider)
	if !ok || !ld.LocalDecision(t.Decision) {
		return false
	}
	if !t.hasPermit {
		return true
	}
	lp, ok := t.a.quota.(LocalPermitter)
	return ok && lp.LocalPermit(t.permit)
}
