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
	done      atomic.Bool
}

// Done reports the attempt's result and gives back everything the ticket
// holds: it records r.Outcome with the breaker (which frees a probe lease),
// settles the permit to r.Tokens and releases it, and returns the pacer slot
// with the outcome's pacing verdict.
// Only the first call acts; later calls return nil. The gates are called with
// ctx stripped of its cancellation, so a cancelled call still gives back its
// permit and lease. Every step runs even when an earlier one fails; the
// failures are logged and returned joined.
func (t *Ticket) Done(ctx context.Context, r Result) error {
	if !t.done.CompareAndSwap(false, true) {
		return nil
	}
	a := t.a
	a.lat.end(t.idx)
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	o := r.Outcome
	if !o.Valid() {
		o = gate.Released
	}
	var errRecord, errPermit error
	if u, err := a.breaker.Record(ctx, t.Source, t.Decision, o); err != nil {
		errRecord = fmt.Errorf("record %s: %w", o, err)
	} else {
		a.w.afterRecord(ctx, t.idx, o, u)
	}
	if t.hasPermit {
		// Settled and released together: one round trip on Redis.
		if err := gate.Finish(ctx, a.quota, t.permit, r.Tokens); err != nil {
			errPermit = fmt.Errorf("give back permit: %w", err)
		}
	}
	if t.paced {
		a.pacer.Release(t.Source, paceOutcome(o, r.Throttled))
	}
	if errRecord == nil && errPermit == nil {
		return nil
	}
	err := fmt.Errorf("pgw/admission: scope %q: giving back source %q: %w",
		a.scope, t.Source, errors.Join(errRecord, errPermit))
	a.log.Warn("pgw: giving back an admission failed", "scope", a.scope, "source", t.Source, "err", err)
	return err
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
