package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// FleetQuota is the local fallback of a QuotaFailover for a fleet of
// processes: it enforces this process's share of each limit — RPM, TPM and
// MaxInFlight divided by N, the processes its Prober last saw alive in Redis
// (at least 1 each) — so that the fleet, each process serving from its own
// fallback during an outage, stays within the limits it shares in Redis.
//
// The bound: with N processes alive and every one on its fallback, the
// fleet admits at most max(limit, N) in flight and per rolling minute — a
// limit smaller than the fleet gives each process one. N is the count of the
// last heartbeat before the outage (Redis cannot be asked during one); a
// process that joined since is not counted, one that left still is. Calls
// admitted by Redis before the outage and still running are not counted by
// the fallbacks: they end within the source's timeout.
//
// A request whose estimate exceeds the share of TPM but not the whole TPM
// reserves the whole share instead of failing. Safe for concurrent use.
type FleetQuota struct {
	limits map[string]gate.Limits
	pr     *Prober
	opts   []memory.Option

	mu     sync.Mutex
	shares map[int]*memory.Quota // by N; built when first needed
	cur    atomic.Pointer[fleetShare]
}

// fleetShare is the quota of one fleet size and the permit ID it marks.
type fleetShare struct {
	n  int
	q  *memory.Quota
	id string
}

var (
	_ gate.QuotaGate = (*FleetQuota)(nil)
	_ gate.Finisher  = (*FleetQuota)(nil)
)

// NewFleetQuota returns the fleet-share fallback for limits, counting the
// fleet with pr. Invalid limits return a *gate.LimitsError.
func NewFleetQuota(limits map[string]gate.Limits, pr *Prober, opts ...memory.Option) (*FleetQuota, error) {
	if pr == nil {
		return nil, &ArgumentError{Name: "prober", Value: "<nil>", Legal: "a *Prober"}
	}
	if err := gate.ValidateLimits(limits); err != nil {
		return nil, err
	}
	f := &FleetQuota{limits: limits, pr: pr, opts: opts, shares: map[int]*memory.Quota{}}
	if _, err := f.quota(1); err != nil {
		return nil, err
	}
	return f, nil
}

// Share returns the limits this process enforces for source now: each of
// source's limits divided by the fleet's size, at least 1, and a rate share
// rounded down to one the gates count exactly (gate.RateLegal) when the
// plain quotient of a large limit is not.
func (f *FleetQuota) Share(source string) gate.Limits {
	return share(f.limits[source], f.pr.Processes())
}

func share(l gate.Limits, n int) gate.Limits {
	div := func(v int) int {
		if v == 0 {
			return 0
		}
		return max(v/n, 1)
	}
	return gate.Limits{RPM: legalRate(div(l.RPM)), TPM: legalRate(div(l.TPM)), MaxInFlight: div(l.MaxInFlight)}
}

// legalRate is v, or when the gates cannot count v exactly (a share of a
// large limit: gate.RateLegal), the largest rate below it they can among
// the multiples of 1000 and then of a minute's µs, which always can be.
func legalRate(v int) int {
	for _, m := range []int{1, 1000, 60_000_000} {
		if r := v - v%m; r > 0 && gate.RateLegal(r) {
			return r
		}
	}
	return v // unreachable for a share of a legal limit
}

// quota returns the memory quota enforcing the shares for a fleet of n.
func (f *FleetQuota) quota(n int) (*memory.Quota, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.shares[n]; q != nil {
		return q, nil
	}
	ls := make(map[string]gate.Limits, len(f.limits))
	for name, l := range f.limits {
		ls[name] = share(l, n)
	}
	q, err := memory.NewQuota(ls, f.opts...)
	if err != nil {
		return nil, err
	}
	f.shares[n] = q
	return q, nil
}

// fleetPermitPrefix marks, in Permit.ID, the fleet size whose quota granted
// the permit, so it goes back there after the count changed.
const fleetPermitPrefix = "pgw-fleet-"

// Acquire takes one request and estTokens from this process's share.
func (f *FleetQuota) Acquire(ctx context.Context, source string, estTokens int64) (gate.Permit, gate.QuotaDecision, error) {
	cur, est, err := f.current(source, estTokens)
	if err != nil {
		return gate.Permit{}, gate.QuotaDecision{}, err
	}
	p, d, err := cur.q.Acquire(ctx, source, est)
	return f.granted(cur, source, estTokens, p, d, err)
}

var _ gate.BudgetAdmitter = (*FleetQuota)(nil)

// AdmitBudget is the share's memory.Quota AdmitBudget: the breaker, this
// process's share and the advertised budget in one operation, so that a
// round the budget refuses takes no request of the share. It combines
// with a memory breaker and a memory budget (ok false otherwise).
func (f *FleetQuota) AdmitBudget(ctx context.Context, b gate.ProviderGate, budget gate.BudgetGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	cur, est, err := f.current(source, estTokens)
	if err != nil {
		return d, p, qd, false, nil
	}
	d, p, qd, ok, err = cur.q.AdmitBudget(ctx, b, budget, source, est)
	if !ok {
		return d, p, qd, false, nil
	}
	p, qd, err = f.granted(cur, source, estTokens, p, qd, err)
	return d, p, qd, true, err
}

// current returns the share of the fleet's size now, and the estimate to
// reserve in it.
func (f *FleetQuota) current(source string, estTokens int64) (*fleetShare, int64, error) {
	n := f.pr.Processes()
	cur := f.cur.Load()
	if cur == nil || cur.n != n {
		q, err := f.quota(n)
		if err != nil {
			return nil, 0, err
		}
		cur = &fleetShare{n: n, q: q, id: fleetPermitPrefix + strconv.Itoa(n)}
		f.cur.Store(cur)
	}
	l := f.limits[source]
	est := estTokens
	if sh := share(l, n); sh.TPM > 0 && est > int64(sh.TPM) && est <= int64(l.TPM) {
		est = int64(sh.TPM)
	}
	return cur, est, nil
}

// granted marks a permit of cur's share and reports a token error against
// the caller's estimate and the whole limit.
func (f *FleetQuota) granted(cur *fleetShare, source string, estTokens int64, p gate.Permit, d gate.QuotaDecision, err error) (gate.Permit, gate.QuotaDecision, error) {
	l := f.limits[source]
	if err != nil {
		// Report the caller's estimate against the whole limit.
		if te, ok := err.(*gate.TokensError); ok {
			te.Tokens, te.TPM = estTokens, l.TPM
		}
		return p, d, err
	}
	if d.Allowed {
		p.ID = cur.id
	}
	return p, d, nil
}

// owner returns the quota that granted p.
func (f *FleetQuota) owner(p gate.Permit) *memory.Quota {
	if cur := f.cur.Load(); cur != nil && cur.id == p.ID {
		return cur.q
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p.ID, fleetPermitPrefix))
	if err != nil || !strings.HasPrefix(p.ID, fleetPermitPrefix) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shares[n]
}

// Settle corrects the account of p's share.
func (f *FleetQuota) Settle(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Settle", Source: p.Source, Tokens: actualTokens}
	}
	if q := f.owner(p); q != nil {
		return q.Settle(ctx, p, actualTokens)
	}
	return nil
}

// Release frees p's in-flight slot.
func (f *FleetQuota) Release(ctx context.Context, p gate.Permit) error {
	if q := f.owner(p); q != nil {
		return q.Release(ctx, p)
	}
	return nil
}

// Finish settles and releases p.
func (f *FleetQuota) Finish(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Finish", Source: p.Source, Tokens: actualTokens}
	}
	if q := f.owner(p); q != nil {
		return q.Finish(ctx, p, actualTokens)
	}
	return nil
}

// InFlight returns the slots of source held in this process's fallback.
func (f *FleetQuota) InFlight(source string) int {
	f.mu.Lock()
	qs := make([]*memory.Quota, 0, len(f.shares))
	for _, q := range f.shares {
		qs = append(qs, q)
	}
	f.mu.Unlock()
	n := 0
	for _, q := range qs {
		n += q.InFlight(source)
	}
	return n
}
