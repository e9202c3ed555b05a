package redis

import (
	"context"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// scriptAdmit is TryEnter, Acquire and the budget's take in one script
// (lua/admit.lua): TryEnter's prelude and body wrapped in a function for
// whatever its fast path does not decide, the budget's rules in a function
// that defines them only when a budget is asked.
var scriptAdmit = goredis.NewScript(lua("clock.lua", "quota_common.lua") +
	"local function budget_lib()\n" + mustRead("lua/budget_common.lua") +
	"\nreturn { load = budget_load, check = budget_check, take = budget_take }\nend\n" +
	body("try_enter_body", "common.lua", "try_enter.lua") + mustRead("lua/admit.lua"))

var (
	_ gate.Admitter       = (*Quota)(nil)
	_ gate.BudgetAdmitter = (*Quota)(nil)
)

// noLimits is the quota part of admit.lua's arguments for a source without
// limits: no rate, no in-flight limit.
var noLimits = []any{"0", "0", "0", "0", "0", "0"}

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
	var keys []string
	var id string
	args := make([]any, 0, len(rb.policy)+10)
	args = append(args, rb.policy...)
	if s != nil {
		keys = s.admitKeys
		if !withBudget {
			keys = keys[:4]
		}
		if s.limits.MaxInFlight > 0 {
			id = newPermitID()
		}
		args = append(args, s.rates...)
		args = append(args, strconv.FormatInt(estTokens, 10), s.maxInFlight, q.leaseArg, id)
	} else {
		keys = q.admitKeys(source)
		args = append(args, noLimits...)
		args = append(args, strconv.FormatInt(max(estTokens, 0), 10), "0", "0", "")
	}
	v, err := runScript(ctx, q.c, scriptAdmit, keys, args...).Int64Slice()
	if err != nil {
		return d, p, qd, true, wrapErr(ctx, "Admit", source, err)
	}
	if len(v) != 10 {
		return d, p, qd, true, replyError("Admit", source, v, 10)
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
