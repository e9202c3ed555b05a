package redis

import (
	"context"
	"fmt"

	"github.com/pgw-go/pgw/gate"
)

// scriptAdmit is TryEnter, Acquire and the budget's take in one script
// (lua/admit.lua): first the common case decided on its own
// (lua/admit_fast.lua), then TryEnter's prelude and body wrapped in a
// function for whatever its fast path does not decide, the budget's rules
// in a function that defines them only when a budget is asked.
var (
	scriptAdmitSrc = mustRead("lua/admit_fast.lua") + lua("clock.lua", "fast.lua", "quota_common.lua") +
		"local function budget_lib()\n" + mustRead("lua/budget_common.lua") +
		"\nreturn { load = budget_load, check = budget_check, take = budget_take }\nend\n" +
		body("try_enter_body", "common.lua", "try_enter.lua") + mustRead("lua/admit.lua")
	scriptAdmit = newLua(scriptAdmitSrc)
)

var (
	_ gate.Admitter       = (*Quota)(nil)
	_ gate.BudgetAdmitter = (*Quota)(nil)
)

// noLimits is the rates of admit.lua's arguments for a source without
// limits.
var noLimits = []any{"0", "0", "0", "0", "0", "0"}

// admitHeads are a source's admit.lua commands up to the call's own
// arguments, built once for the breaker they were built with: "evalsha",
// the hash, the number of keys, the keys, the policy, the rates,
// MaxInFlight and the lease — without and with the budget's key.
type admitHeads struct {
	rb    *Breaker
	heads [2][]any
}

// admitHead returns s's admit.lua command head for rb (admitHeads).
func (s *quotaSource) admitHead(q *Quota, rb *Breaker, withBudget bool) []any {
	h := s.heads.Load()
	if h == nil || h.rb != rb {
		h = &admitHeads{rb: rb, heads: [2][]any{
			q.newAdmitHead(rb, s.admitKeys[:4], s.rates, s.maxInFlight),
			q.newAdmitHead(rb, s.admitKeys, s.rates, s.maxInFlight),
		}}
		s.heads.Store(h)
	}
	if withBudget {
		return h.heads[1]
	}
	return h.heads[0]
}

// newAdmitHead builds one admit.lua command head (admitHeads).
func (q *Quota) newAdmitHead(rb *Breaker, keys []string, rates []any, maxInFlight string) []any {
	head := make([]any, 0, 3+len(keys)+len(rb.policy)+len(rates)+2)
	head = append(head, "evalsha", scriptAdmit.Hash(), len(keys))
	for _, k := range keys {
		head = append(head, k)
	}
	head = append(head, rb.policy...)
	head = append(head, rates...)
	return append(head, maxInFlight, q.leaseArg)
}

// Admit asks b.TryEnter(source) and, when it allows, Acquire(source,
// estTokens), in one script and one round trip (gate.Admitter). It combines
// with a *Breaker on the same prefix and scope, whose keys share the
// source's slot; ok is false for any other breaker. A source without limits
// costs the TryEnter alone.
func (q *Quota) Admit(ctx context.Context, b gate.ProviderGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	rb, isRedis := b.(*Breaker)
	if !isRedis || rb.prefix != q.prefix {
		return d, p, qd, false, nil
	}
	return q.admit(ctx, rb, false, source, estTokens)
}

// AdmitBudget is Admit and, when the quota reserved, budget's Take, all in
// one script and one round trip (gate.BudgetAdmitter). It combines with a
// *Breaker and a *Budget on the same prefix and scope; ok is false for any
// other pair.
func (q *Quota) AdmitBudget(ctx context.Context, b gate.ProviderGate, budget gate.BudgetGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	rb, isRedis := b.(*Breaker)
	bg, isBudget := budget.(*Budget)
	if !isRedis || !isBudget || rb.prefix != q.prefix || bg.prefix != q.prefix {
		return d, p, qd, false, nil
	}
	return q.admit(ctx, rb, true, source, estTokens)
}

// admit runs admit.lua for source, with the budget's key when withBudget.
func (q *Quota) admit(ctx context.Context, rb *Breaker, withBudget bool, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	s := q.sources[source]
	if estTokens < 0 || (s != nil && s.limits.TPM > 0 && estTokens > int64(s.limits.TPM)) {
		_, _, err = q.Acquire(ctx, source, estTokens) // the same *gate.TokensError, no I/O
		return d, p, qd, true, err
	}
	if s == nil && !withBudget {
		if d, err = rb.TryEnter(ctx, source); err != nil || !d.Allowed {
			return d, p, qd, true, err
		}
		return d, gate.Permit{Source: source, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, true, nil
	}
	var head []any
	var id string
	if s != nil {
		head = s.admitHead(q, rb, withBudget)
		if s.limits.MaxInFlight > 0 {
			id = newPermitID()
		}
	} else {
		head = q.newAdmitHead(rb, q.admitKeys(source), noLimits, "0")
	}
	nonce := probeNonce(ctx)
	args := make([]any, len(head), len(head)+3)
	copy(args, head)
	args = append(args, max(estTokens, 0), id)
	if nonce != 0 {
		args = append(args, nonce)
	}
	var v [10]int64
	if err := ints(runArgs(ctx, q.c, scriptAdmitSrc, args), v[:]); err != nil {
		q.forgetLease(ctx, source, id)
		rb.forgetProbe(ctx, rb.Keys(source), nonce)
		if _, bad := err.(*replyShapeError); bad {
			return d, p, qd, true, fmt.Errorf("pgw/gate/redis: Admit %q: %w", source, err)
		}
		return d, p, qd, true, wrapErr(ctx, "Admit", source, err)
	}
	st, err := state("Admit", source, v[1])
	if err != nil {
		return d, p, qd, true, err
	}
	d = gate.Decision{
		Allowed:    v[0] == 1,
		State:      st,
		RetryAfter: micros(v[2]),
		Probe:      v[3] == 1,
		Token:      uint64(v[4]),
		Generation: uint64(v[5]),
		Forced:     gate.Force(v[6]),
	}
	if !d.Allowed {
		return d, p, qd, true, nil
	}
	if v[7] == 1 {
		return d, gate.Permit{Source: source, ID: id, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, true, nil
	}
	limit, err := admitLimitName(source, v[9])
	if err != nil {
		return d, p, qd, true, err
	}
	return d, p, gate.QuotaDecision{RetryAfter: micros(v[8]), Limit: limit}, true, nil
}

// admitKeys are admit.lua's five keys of source: the breaker's two, the
// quota's two and the advertised budget's.
func (q *Quota) admitKeys(source string) []string {
	pre := q.prefix + source + "}:"
	return []string{pre + "cb", pre + "probes", pre + "quota", pre + "inflight", pre + "advertised"}
}

// admitLimitName names the limit code of an admit.lua rejection: the
// quota's, or 4 and 5 for the advertised budget's.
func admitLimitName(source string, code int64) (string, error) {
	switch code {
	case 4:
		return gate.LimitAdvertisedRequests, nil
	case 5:
		return gate.LimitAdvertisedTokens, nil
	}
	return limitName(source, code)
}
