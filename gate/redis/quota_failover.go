package redis

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/pgw-go/pgw/gate"
)

// fallbackPermitID marks, in gate.Permit.ID, a permit the fallback granted.
// Redis permit IDs are hex, so they never collide with it.
const fallbackPermitID = "pgw-local-fallback"

// QuotaFailover is the quota counterpart of Failover: it serves from a
// primary quota gate (a Redis Quota) and, in FailOpen mode, from a local
// fallback (a memory quota with the same limits) while the primary returns
// errors matching ErrUnreachable (the PGW_REDIS_DOWN policy). Outages are
// detected, retried and logged as Failover does.
//
// A permit goes back to the gate that granted it. A Redis permit whose Settle
// or Release cannot reach Redis is dropped: its account cannot be corrected
// now, and its in-flight lease expires in Redis by itself. Safe for
// concurrent use; it starts no goroutine.
type QuotaFailover struct {
	primary, fallback gate.QuotaGate
	outage
	lastID atomic.Pointer[[2]string] // the last fallback ID and its marked form
}

// markID returns fallbackPermitID + id, without allocating for the ID the
// fallback gave last (a fallback gives few distinct IDs).
func (f *QuotaFailover) markID(id string) string {
	if id == "" {
		return fallbackPermitID
	}
	if last := f.lastID.Load(); last != nil && last[0] == id {
		return last[1]
	}
	m := fallbackPermitID + id
	f.lastID.Store(&[2]string{id, m})
	return m
}

var (
	_ gate.QuotaGate = (*QuotaFailover)(nil)
	_ gate.Finisher  = (*QuotaFailover)(nil)
)

// NewQuotaFailover returns a quota gate that serves from primary and, in
// FailOpen mode, from fallback while primary is unreachable. fallback may be
// nil for FailClosed. logger nil means slog.Default().
func NewQuotaFailover(primary, fallback gate.QuotaGate, mode Mode, logger *slog.Logger, opts ...FailoverOption) (*QuotaFailover, error) {
	if primary == nil {
		return nil, &ArgumentError{Name: "primary", Value: "<nil>", Legal: "a gate.QuotaGate"}
	}
	switch mode {
	case FailOpen:
		if fallback == nil {
			return nil, &ArgumentError{Name: "fallback", Value: "<nil>", Legal: "a gate.QuotaGate for fail_open"}
		}
	case FailClosed:
	default:
		return nil, &ArgumentError{Name: "mode", Value: mode.String(), Legal: "FailOpen, FailClosed"}
	}
	f := &QuotaFailover{primary: primary, fallback: fallback}
	f.init("quota", mode, logger, opts)
	return f, nil
}

// Acquire asks the primary, or the fallback during an outage.
func (f *QuotaFailover) Acquire(ctx context.Context, source string, estTokens int64) (gate.Permit, gate.QuotaDecision, error) {
	if f.mode == FailClosed {
		if err := f.outageNow("Acquire"); err != nil {
			return gate.Permit{}, gate.QuotaDecision{}, err
		}
		p, d, err := f.primary.Acquire(ctx, source, estTokens)
		return p, d, f.closedSettle(err)
	}
	if use, probe := f.usePrimary(); use {
		p, d, err := f.primary.Acquire(ctx, source, estTokens)
		if !f.settle(err, probe) {
			return p, d, err
		}
	}
	p, d, err := f.fallback.Acquire(ctx, source, estTokens)
	if err == nil && d.Allowed {
		p.ID = f.markID(p.ID) // the fallback's own ID kept behind the mark
	}
	return p, d, err
}

// Settle corrects the account of the gate that granted p.
func (f *QuotaFailover) Settle(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if id, ok := strings.CutPrefix(p.ID, fallbackPermitID); ok {
		p.ID = id
		return f.fallback.Settle(ctx, p, actualTokens)
	}
	return f.dropUnreachable(f.primary.Settle(ctx, p, actualTokens))
}

// Release frees p's slot in the gate that granted it.
func (f *QuotaFailover) Release(ctx context.Context, p gate.Permit) error {
	if id, ok := strings.CutPrefix(p.ID, fallbackPermitID); ok {
		p.ID = id
		return f.fallback.Release(ctx, p)
	}
	return f.dropUnreachable(f.primary.Release(ctx, p))
}

// Finish settles and releases p in the gate that granted it: one round trip
// on Redis (see Quota.Finish).
func (f *QuotaFailover) Finish(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Finish", Source: p.Source, Tokens: actualTokens}
	}
	if id, ok := strings.CutPrefix(p.ID, fallbackPermitID); ok {
		p.ID = id
		return gate.Finish(ctx, f.fallback, p, actualTokens)
	}
	return f.dropUnreachable(gate.Finish(ctx, f.primary, p, actualTokens))
}

// dropUnreachable turns an outage into success for the give-back of a Redis
// permit in FailOpen mode.
func (f *QuotaFailover) dropUnreachable(err error) error {
	if f.mode == FailOpen && errors.Is(err, ErrUnreachable) {
		f.settle(err, false)
		return nil
	}
	return f.closedSettle(err)
}

var _ gate.Admitter = (*QuotaFailover)(nil)

// Admit runs the primary's Admit (one round trip on Redis) with b's primary
// when b is the Failover of the same Redis, outside an outage of either
// gate (gate.Admitter). During an outage, or when the round trip finds Redis
// unreachable (the outage then starts for both gates), it reports ok false
// and does nothing more: the caller's TryEnter and Acquire then serve from
// the fallbacks, as they do in any outage.
func (f *QuotaFailover) Admit(ctx context.Context, b gate.ProviderGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	pa, isAdmitter := f.primary.(gate.Admitter)
	fb, isFailover := b.(*Failover)
	if !isAdmitter {
		return d, p, qd, false, nil
	}
	if f.mode == FailClosed {
		if err := f.outageNow("Admit"); err != nil {
			return d, p, qd, true, err
		}
		if isFailover {
			b = fb.primary
		}
		d, p, qd, ok, err = pa.Admit(ctx, b, source, estTokens)
		return d, p, qd, ok, f.closedSettle(err)
	}
	if !isFailover || fb.mode != FailOpen || f.Degraded() || fb.Degraded() {
		return d, p, qd, false, nil
	}
	d, p, qd, ok, err = pa.Admit(ctx, fb.primary, source, estTokens)
	if ok && errors.Is(err, ErrUnreachable) {
		f.settle(err, false)
		fb.settle(err, false)
		return gate.Decision{}, gate.Permit{}, gate.QuotaDecision{}, false, nil
	}
	return d, p, qd, ok, err
}

// admitLocal is AdmitBudget from the three fallbacks during a prober's
// outage, when the quota and the breaker both fail open and the quota's
// fallback can combine them (a memory quota or a FleetQuota): the breaker, the quota and the budget are asked in the
// order of the Redis script, so a round the budget refuses takes no
// request of the fallback's RPM. The decision and the permit are marked
// as the fallbacks' own, as TryEnter and Acquire mark them.
func (f *QuotaFailover) admitLocal(ctx context.Context, fb *Failover, bf *BudgetFailover, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	la, can := f.fallback.(gate.BudgetAdmitter)
	if !can || fb.fallback == nil {
		return d, p, qd, false, nil
	}
	d, p, qd, ok, err = la.AdmitBudget(ctx, fb.fallback, bf.fallback, source, estTokens)
	if !ok {
		return gate.Decision{}, gate.Permit{}, gate.QuotaDecision{}, false, nil
	}
	d.Token |= fallbackBit
	d.Generation |= fallbackBit
	if err == nil && qd.Allowed {
		p.ID = f.markID(p.ID)
	}
	return d, p, qd, true, err
}

// LocalPermit reports whether p was granted by the local fallback, so that
// giving it back does no I/O.
func (f *QuotaFailover) LocalPermit(p gate.Permit) bool {
	return strings.HasPrefix(p.ID, fallbackPermitID)
}

var _ gate.BudgetAdmitter = (*QuotaFailover)(nil)

// AdmitBudget is Admit with the advertised budget's take in the same
// script (gate.BudgetAdmitter): budget is a *Budget, or a *BudgetFailover
// outside an outage, whose primary then takes part. During an outage of
// any of the three, or when the round trip finds Redis unreachable, ok is
// false under fail_open, so that the caller admits from the fallbacks and
// takes the budget on its own.
func (f *QuotaFailover) AdmitBudget(ctx context.Context, b gate.ProviderGate, budget gate.BudgetGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	pa, isAdmitter := f.primary.(gate.BudgetAdmitter)
	if !isAdmitter {
		return d, p, qd, false, nil
	}
	bf, budgetFailover := budget.(*BudgetFailover)
	fb, isFailover := b.(*Failover)
	if f.mode == FailOpen && isFailover && fb.mode == FailOpen && budgetFailover && f.local() && fb.local() && bf.local() {
		return f.admitLocal(ctx, fb, bf, source, estTokens)
	}
	if budgetFailover {
		if bf.Degraded() {
			return d, p, qd, false, nil
		}
		budget = bf.primary
	}
	if f.mode == FailClosed {
		if err := f.outageNow("Admit"); err != nil {
			return d, p, qd, true, err
		}
		if isFailover {
			b = fb.primary
		}
		d, p, qd, ok, err = pa.AdmitBudget(ctx, b, budget, source, estTokens)
		if ok && budgetFailover && errors.Is(err, ErrUnreachable) {
			bf.settle(err, false)
		}
		return d, p, qd, ok, f.closedSettle(err)
	}
	if !isFailover || fb.mode != FailOpen || f.Degraded() || fb.Degraded() {
		return d, p, qd, false, nil
	}
	d, p, qd, ok, err = pa.AdmitBudget(ctx, fb.primary, budget, source, estTokens)
	if ok && errors.Is(err, ErrUnreachable) {
		f.settle(err, false)
		fb.settle(err, false)
		if budgetFailover {
			bf.settle(err, false)
		}
		return gate.Decision{}, gate.Permit{}, gate.QuotaDecision{}, false, nil
	}
	return d, p, qd, ok, err
}
