package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// DefaultLease is how long an in-flight slot stays taken when its permit is
// never released (a crashed or partitioned process): longer than any sane
// call, short enough that a lost slot comes back within minutes.
const DefaultLease = 10 * time.Minute

// The quota scripts, one per operation. Acquire and Settle share the bucket
// arithmetic of lua/quota_common.lua, prepended to each body.
var (
	scriptQuotaAcquire = newLua(lua("clock.lua", "quota_common.lua", "quota_acquire.lua"))
	scriptQuotaSettle  = newLua(lua("clock.lua", "quota_common.lua", "quota_settle.lua"))
	scriptQuotaRelease = newLua(mustRead("lua/quota_release.lua"))
	scriptQuotaFinish  = newLua(lua("clock.lua", "quota_common.lua", "quota_finish.lua"))
)

// Quota is the Redis quota gate: per (scope, source) a rolling RPM bucket, a
// rolling TPM bucket and a set of in-flight leases, shared by every process on
// the same Redis, prefix and scope. Each operation is one Lua script (one
// round trip) on Redis server time; it decides exactly as the memory gate
// does (gate/memory), to the µs. In-flight slots are leases that expire after
// the lease length (DefaultLease) so a crashed process cannot leak them.
//
// Sources without Limits, or with zero Limits, are unlimited and cost no
// round trip; nor does a Settle for a source without TPM, or a Release of a
// permit without an in-flight lease. Quota holds nothing between calls and is
// safe for concurrent use.
type Quota struct {
	c        goredis.UniversalClient
	prefix   string // "<prefix>:{<scope>:"
	lease    time.Duration
	leaseArg string                  // lease in µs, as quota_acquire.lua's ARGV[8]
	sources  map[string]*quotaSource // read-only after NewQuota
	// forgetting counts the lease releases forgetLease has in flight, at
	// most maxForgetting.
	forgetting atomic.Int32
}

var (
	_ gate.QuotaGate = (*Quota)(nil)
	_ gate.Finisher  = (*Quota)(nil)
)

// quotaSource is one source's limits rendered as script arguments.
type quotaSource struct {
	limits      gate.Limits
	keys        []string                   // bucket hash, in-flight lease set
	admitKeys   []string                   // admit.lua's five keys (Quota.admitKeys)
	rates       []any                      // ARGV[1..6] of quota_acquire.lua
	tpm         []any                      // ARGV[1..3] of quota_settle.lua and quota_finish.lua
	maxInFlight string                     // ARGV[7] of quota_acquire.lua
	heads       atomic.Pointer[admitHeads] // admit.lua's (admitHead)
	conclude    atomic.Pointer[admitHeads] // conclude.lua's (concludeHead)
}

// tpmDelta is the correction a settlement of p to actualTokens makes,
// bounded to ±2·TPM (the bucket forgives any overdraft beyond that).
func (s *quotaSource) tpmDelta(p gate.Permit, actualTokens int64) int64 {
	bound := 2 * int64(s.limits.TPM)
	return min(max(actualTokens-p.Tokens, -bound), bound)
}

// NewQuota returns a quota gate on c (a single node, a cluster or a
// sentinel-backed client) enforcing limits, keyed by source name, for the
// sources of scope. The scope is lower-cased in keys, which share the hash tag
// of the breaker's keys ({scope:source}). Invalid limits return a
// *gate.LimitsError listing every problem. NewQuota does no I/O; see Preload.
func NewQuota(c goredis.UniversalClient, scope string, limits map[string]gate.Limits, opts ...Option) (*Quota, error) {
	if c == nil {
		return nil, &ArgumentError{Name: "client", Value: "<nil>", Legal: "a goredis.UniversalClient"}
	}
	if scope == "" || strings.ContainsAny(scope, "{}") {
		return nil, &ArgumentError{Name: "scope", Value: scope, Legal: "non-empty, without '{' or '}'"}
	}
	if err := gate.ValidateLimits(limits); err != nil {
		return nil, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	q := &Quota{
		c:       c,
		prefix:  o.prefix + ":{" + strings.ToLower(scope) + ":",
		lease:   o.lease,
		sources: make(map[string]*quotaSource, len(limits)),
	}
	q.leaseArg = strconv.FormatInt(q.lease.Microseconds(), 10)
	for name, l := range limits {
		if l.Unlimited() {
			continue
		}
		rpm, tpm := rateArgs(l.RPM), rateArgs(l.TPM)
		q.sources[name] = &quotaSource{
			limits:      l,
			keys:        q.Keys(name),
			admitKeys:   q.admitKeys(name),
			rates:       append(rpm, tpm...),
			tpm:         tpm,
			maxInFlight: strconv.Itoa(l.MaxInFlight),
		}
	}
	return q, nil
}

// Lease returns the in-flight lease length.
func (q *Quota) Lease() time.Duration { return q.lease }

// Keys returns the two quota keys of source: the bucket hash and the
// in-flight lease set, both under the hash tag {scope:source}.
func (q *Quota) Keys(source string) []string {
	return []string{q.prefix + source + "}:quota", q.prefix + source + "}:inflight"}
}

// Preload loads the quota scripts into Redis (every master of a cluster), so
// that even the first operation is a single EVALSHA.
func (q *Quota) Preload(ctx context.Context) error {
	for _, s := range []*script{scriptQuotaAcquire, scriptQuotaSettle, scriptQuotaRelease, scriptQuotaFinish, scriptAdmit, scriptConclude} {
		if err := s.Load(ctx, q.c).Err(); err != nil {
			return wrapErr(ctx, "Preload", "", err)
		}
	}
	return nil
}

// Acquire reserves one request and estTokens tokens for source and takes an
// in-flight lease, all or nothing, or rejects with the exact RetryAfter of
// gate.QuotaDecision: one script, one round trip.
func (q *Quota) Acquire(ctx context.Context, source string, estTokens int64) (gate.Permit, gate.QuotaDecision, error) {
	s := q.sources[source]
	if estTokens < 0 || (s != nil && s.limits.TPM > 0 && estTokens > int64(s.limits.TPM)) {
		tpm := 0
		if s != nil {
			tpm = s.limits.TPM
		}
		return gate.Permit{}, gate.QuotaDecision{}, &gate.TokensError{Op: "Acquire", Source: source, Tokens: estTokens, TPM: tpm}
	}
	if s == nil {
		// No I/O to refuse a done ctx: refuse it here, as a script would.
		if err := ctx.Err(); err != nil {
			return gate.Permit{}, gate.QuotaDecision{}, gate.DoneError("Acquire", source, err)
		}
		return gate.Permit{Source: source, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, nil
	}
	var id string
	if s.limits.MaxInFlight > 0 {
		id = newPermitID()
	}
	args := make([]any, 0, 10)
	args = append(args, s.rates...)
	args = append(args, s.maxInFlight, q.leaseArg, strconv.FormatInt(estTokens, 10), id)
	v, err := runScript(ctx, q.c, scriptQuotaAcquire, s.keys, args...).Int64Slice()
	if err != nil {
		q.forgetLease(ctx, source, id)
		return gate.Permit{}, gate.QuotaDecision{}, wrapErr(ctx, "Acquire", source, err)
	}
	if len(v) != 3 {
		return gate.Permit{}, gate.QuotaDecision{}, replyError("Acquire", source, v, 3)
	}
	if v[0] == 1 {
		return gate.Permit{Source: source, ID: id, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, nil
	}
	limit, err := limitName(source, v[2])
	if err != nil {
		return gate.Permit{}, gate.QuotaDecision{}, err
	}
	return gate.Permit{}, gate.QuotaDecision{RetryAfter: micros(v[1]), Limit: limit}, nil
}

// forgetTimeout bounds the release forgetLease sends; maxForgetting bounds
// how many run at once, so that a burst of callers giving up on a slow Redis
// starts no more than that many goroutines (a lease not released for want
// of room expires by itself).
const (
	forgetTimeout = time.Second
	maxForgetting = 32
)

// forgetLease frees, off the caller's path, the in-flight lease id that a
// script whose round trip the caller gave up on may have taken: the script
// may have run with only its reply lost, and its lease would hold the
// source's slot, fleet-wide, until the lease expires (DefaultLease). The
// release is a no-op when the script never ran. Only a round trip that
// ended with the caller's ctx is followed up (gaveUp: its deadline too,
// which the client's socket timer may report a moment before ctx does):
// after an outage the release would fail too, and the lease expires by
// itself.
func (q *Quota) forgetLease(ctx context.Context, source, id string) {
	if id == "" || !gaveUp(ctx) {
		return
	}
	if q.forgetting.Add(1) > maxForgetting {
		q.forgetting.Add(-1)
		return
	}
	go func() {
		defer q.forgetting.Add(-1)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
		defer cancel()
		_ = q.Release(rctx, gate.Permit{Source: source, ID: id})
	}()
}

// Settle corrects p's source's token account by actualTokens − p.Tokens: one
// script, one round trip; none when the source has no TPM or the count
// equals the estimate.
func (q *Quota) Settle(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Settle", Source: p.Source, Tokens: actualTokens}
	}
	s := q.sources[p.Source]
	if s == nil || s.limits.TPM == 0 || actualTokens == p.Tokens {
		return nil
	}
	args := append(append(make([]any, 0, 4), s.tpm...), strconv.FormatInt(s.tpmDelta(p, actualTokens), 10))
	if err := runScript(ctx, q.c, scriptQuotaSettle, s.keys[:1], args...).Err(); err != nil {
		return wrapErr(ctx, "Settle", p.Source, err)
	}
	return nil
}

// Release frees p's in-flight lease: one script, one round trip; none for a
// permit without a lease (a zero Permit, a source without MaxInFlight).
// Releasing twice, or after the lease expired, frees nothing.
func (q *Quota) Release(ctx context.Context, p gate.Permit) error {
	if p.ID == "" {
		return nil
	}
	s := q.sources[p.Source]
	if s == nil || s.limits.MaxInFlight == 0 {
		return nil
	}
	if err := runScript(ctx, q.c, scriptQuotaRelease, s.keys[1:], p.ID).Err(); err != nil {
		return wrapErr(ctx, "Release", p.Source, err)
	}
	return nil
}

// Finish settles p to actualTokens and releases its in-flight lease, as
// Settle then Release would, in one script and one round trip when both have
// work to do (otherwise the one that has, or none). Like Settle it is called
// once per permit; a negative actualTokens is a *gate.TokensError and
// releases nothing.
func (q *Quota) Finish(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Finish", Source: p.Source, Tokens: actualTokens}
	}
	s := q.sources[p.Source]
	if s == nil {
		return nil
	}
	settle := s.limits.TPM != 0 && actualTokens != p.Tokens
	release := p.ID != "" && s.limits.MaxInFlight != 0
	switch {
	case settle && release:
		args := append(append(make([]any, 0, 5), s.tpm...), strconv.FormatInt(s.tpmDelta(p, actualTokens), 10), p.ID)
		if err := runScript(ctx, q.c, scriptQuotaFinish, s.keys[:2], args...).Err(); err != nil {
			return wrapErr(ctx, "Finish", p.Source, err)
		}
		return nil
	case settle:
		return q.Settle(ctx, p, actualTokens)
	case release:
		return q.Release(ctx, p)
	}
	return nil
}

// Limits returns the limits NewQuota was given for source; ok is false for a
// source it was not given (which is unlimited).
func (q *Quota) Limits(source string) (l gate.Limits, ok bool) {
	if s := q.sources[source]; s != nil {
		return s.limits, true
	}
	return gate.Limits{}, false
}

// rateArgs renders a per-minute limit as drain, unit, capacity (all "0" for
// unlimited).
func rateArgs(perMinute int) []any {
	r := gate.NewRate(perMinute)
	return []any{
		strconv.FormatInt(r.Drain, 10),
		strconv.FormatInt(r.Unit, 10),
		strconv.FormatInt(r.Capacity, 10),
	}
}

func limitName(source string, code int64) (string, error) {
	switch code {
	case 1:
		return gate.LimitRPM, nil
	case 2:
		return gate.LimitTPM, nil
	case 3:
		return gate.LimitInFlight, nil
	}
	return "", fmt.Errorf("pgw/gate/redis: Acquire %q: script rejected with unknown limit code %d (legal: 1 rpm, 2 tpm, 3 in_flight)", source, code)
}

// Permit IDs are unique across processes without a round trip: a random
// per-process prefix and a counter.
var (
	permitPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		return hex.EncodeToString(b[:]) + "-"
	}()
	permitSeq atomic.Uint64
)

func newPermitID() string {
	var b strings.Builder // one allocation: String does not copy
	b.Grow(len(permitPrefix) + 13)
	b.WriteString(permitPrefix)
	var n [13]byte
	b.Write(strconv.AppendUint(n[:0], permitSeq.Add(1), 36))
	return b.String()
}
