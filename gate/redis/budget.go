package redis

import (
	"context"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// scriptBudget is the advertised budget's one script (lua/budget.lua).
var scriptBudget = newLua(lua("clock.lua", "budget_common.lua", "budget.lua"))

// Budget is the Redis gate.BudgetGate: the rate-limit figures the upstreams
// advertise, one hash per (scope, source) in the source's hash-tag slot
// ({scope:source}, beside its breaker and quota keys), shared by every
// process on the same Redis, prefix and scope. Each operation is one script
// on Redis server time and decides exactly as the memory gate does. The
// hash expires one window after the last reset it knows, so the limit
// outlives the reset (the budget is the limit again then) and an idle
// source's figures go. Budget holds nothing between calls and is safe for
// concurrent use.
type Budget struct {
	c      goredis.UniversalClient
	prefix string // "<prefix>:{<scope>:"
}

var _ gate.BudgetGate = (*Budget)(nil)

// NewBudget returns the advertised budget of scope on c. The scope is
// lower-cased in keys, as the quota's and the breaker's are. Only
// WithPrefix of the options applies. NewBudget does no I/O.
func NewBudget(c goredis.UniversalClient, scope string, opts ...Option) (*Budget, error) {
	if c == nil {
		return nil, &ArgumentError{Name: "client", Value: "<nil>", Legal: "a goredis.UniversalClient"}
	}
	if scope == "" || strings.ContainsAny(scope, "{}") {
		return nil, &ArgumentError{Name: "scope", Value: scope, Legal: "non-empty, without '{' or '}'"}
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Budget{c: c, prefix: o.prefix + ":{" + strings.ToLower(scope) + ":"}, nil
}

// Key returns the budget's key of source.
func (b *Budget) Key(source string) string { return b.prefix + source + "}:advertised" }

// Preload loads the budget script into Redis.
func (b *Budget) Preload(ctx context.Context) error {
	if err := scriptBudget.Load(ctx, b.c).Err(); err != nil {
		return wrapErr(ctx, "Preload", "", err)
	}
	return nil
}

// Take reserves one request and estTokens tokens against source's
// advertised budget: one script, one round trip.
func (b *Budget) Take(ctx context.Context, source string, estTokens int64) (gate.BudgetDecision, error) {
	v, err := runScript(ctx, b.c, scriptBudget, []string{b.Key(source)}, "take", strconv.FormatInt(max(estTokens, 0), 10)).Int64Slice()
	if err != nil {
		return gate.BudgetDecision{}, wrapErr(ctx, "Take", source, err)
	}
	if len(v) != 3 {
		return gate.BudgetDecision{}, replyError("Take", source, v, 3)
	}
	if v[0] == 1 {
		return gate.BudgetDecision{Allowed: true}, nil
	}
	limit := gate.LimitAdvertisedRequests
	if v[2] == 2 {
		limit = gate.LimitAdvertisedTokens
	}
	return gate.BudgetDecision{RetryAfter: micros(v[1]), Limit: limit}, nil
}

// Refresh applies what an answer advertised for source: one script, one
// round trip; none when the answer advertised nothing.
func (b *Budget) Refresh(ctx context.Context, source string, a gate.Advertised) error {
	if !a.Requests.Known() && !a.Tokens.Known() && a.Requests.Limit < 0 && a.Tokens.Limit < 0 {
		return nil
	}
	f := func(n int64) string { return strconv.FormatInt(n, 10) }
	err := runScript(ctx, b.c, scriptBudget, []string{b.Key(source)}, "refresh",
		f(a.Requests.Limit), f(a.Requests.Remaining), f(a.Requests.Reset.Microseconds()),
		f(a.Tokens.Limit), f(a.Tokens.Remaining), f(a.Tokens.Reset.Microseconds())).Err()
	if err != nil {
		return wrapErr(ctx, "Refresh", source, err)
	}
	return nil
}

// Read returns source's budget as it stands: one round trip.
func (b *Budget) Read(ctx context.Context, source string) (gate.Advertised, bool, error) {
	none := gate.Advertised{Requests: gate.UnknownWindow, Tokens: gate.UnknownWindow}
	v, err := runScript(ctx, b.c, scriptBudget, []string{b.Key(source)}, "read").Int64Slice()
	if err != nil {
		return none, false, wrapErr(ctx, "Read", source, err)
	}
	if len(v) != 7 {
		return none, false, replyError("Read", source, v, 7)
	}
	if v[0] == 0 {
		return none, false, nil
	}
	return gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: v[1], Remaining: v[2], Reset: micros(v[3])},
		Tokens:   gate.AdvertisedWindow{Limit: v[4], Remaining: v[5], Reset: micros(v[6])},
	}, true, nil
}
