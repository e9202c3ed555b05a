package redis

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// keyTTLFactor multiplies max(MaxCooldown, ProbeTTL, Window) into the TTL of
// a source's keys; see the package documentation for why 2.
const keyTTLFactor = 2

// Breaker is the breaker gate whose records live in Redis, shared by every
// process that uses the same Redis, prefix and scope. It follows the state
// machine and RetryAfter contract of package gate exactly, deciding each
// operation in one Lua script on Redis server time. It holds nothing between
// calls, so it is safe for concurrent use.
type Breaker struct {
	c      goredis.UniversalClient
	p      gate.Policy
	prefix string // "<prefix>:{<scope>:"
	policy []any  // ARGV[1..NPOLICY] of every script (lua/common.lua)
	// forgetting counts the probe releases forgetProbe has in flight, at
	// most maxForgetting.
	forgetting atomic.Int32
}

var _ gate.ProviderGate = (*Breaker)(nil)

// NewBreaker returns a breaker gate on c (a single node, a cluster or a
// sentinel-backed client) for the sources of scope. The scope is lower-cased
// in keys, so "CHAT" and "chat" share records. p's zero fields mean the
// defaults of gate.Policy; an invalid p returns p.Validate()'s
// *gate.PolicyError. NewBreaker does no I/O; see Preload.
func NewBreaker(c goredis.UniversalClient, scope string, p gate.Policy, opts ...Option) (*Breaker, error) {
	if c == nil {
		return nil, &ArgumentError{Name: "client", Value: "<nil>", Legal: "a goredis.UniversalClient"}
	}
	if scope == "" || strings.ContainsAny(scope, "{}") {
		return nil, &ArgumentError{Name: "scope", Value: scope, Legal: "non-empty, without '{' or '}'"}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	p = p.WithDefaults()
	return &Breaker{
		c:      c,
		p:      p,
		prefix: o.prefix + ":{" + strings.ToLower(scope) + ":",
		policy: policyArgs(p),
	}, nil
}

// Policy returns the effective policy, defaults filled in.
func (b *Breaker) Policy() gate.Policy { return b.p }

// KeyTTL is the TTL every write gives a source's keys: a source nobody calls
// for that long vanishes and then reads as a fresh Closed record. It is
// 2 × max(MaxCooldown, ProbeTTL, Window) in the whole milliseconds that
// PEXPIRE takes (a finer part is dropped), and the longest time.Duration
// when that product is longer.
func (b *Breaker) KeyTTL() time.Duration { return keyTTL(b.p) }

func keyTTL(p gate.Policy) time.Duration {
	// Saturated, never overflowed: a cooldown of a century or more would
	// otherwise wrap to a negative TTL, and the record of an Open source
	// would vanish a millisecond after it opened.
	longest := max(p.MaxCooldown, p.ProbeTTL, p.Window)
	ttl := time.Duration(math.MaxInt64)
	if longest <= math.MaxInt64/keyTTLFactor {
		ttl = keyTTLFactor * longest
	}
	return max(ttl.Truncate(time.Millisecond), time.Millisecond)
}

// policyArgs renders p as ARGV[1..NPOLICY] (lua/common.lua): the key TTL in
// ms and the window bucket width in ms, which the scripts' fast paths read,
// then the rest as one comma-separated argument. Durations travel in µs,
// the resolution of Redis TIME; the bucket width in ms, as gate.Policy
// defines the bucket index.
func policyArgs(p gate.Policy) []any {
	var width int64
	if p.Window > 0 {
		width = max(p.Window.Milliseconds()/10, 1)
	}
	rest := strings.Join([]string{
		strconv.Itoa(p.ConsecutiveFailures),
		strconv.FormatInt(p.Cooldown.Microseconds(), 10),
		strconv.FormatInt(p.MaxCooldown.Microseconds(), 10),
		strconv.FormatFloat(p.CooldownMultiplier, 'g', -1, 64),
		strconv.FormatInt(p.ProbeTTL.Microseconds(), 10),
		strconv.Itoa(p.SuccessThreshold),
		strconv.Itoa(p.HalfOpenProbes),
		strconv.Itoa(p.WindowMinCalls),
		strconv.FormatFloat(p.WindowFailureRate, 'g', -1, 64),
		strconv.Itoa(p.WindowFailures),
		strconv.Itoa(p.HalfOpenCalls),
	}, ",")
	return []any{
		strconv.FormatInt(keyTTL(p).Milliseconds(), 10),
		strconv.FormatInt(width, 10),
		rest,
	}
}

// Keys returns the two keys of source: the record hash and the probe lease
// set. Both carry the hash tag {scope:source}, so they share a cluster slot.
func (b *Breaker) Keys(source string) []string {
	return []string{b.prefix + source + "}:cb", b.prefix + source + "}:probes"}
}

// Preload loads the four scripts into Redis (into every master of a
// cluster), so that even the first operation is a single EVALSHA. It is
// optional: without it the first run of each script costs one NOSCRIPT reply
// and an EVAL.
func (b *Breaker) Preload(ctx context.Context) error {
	for _, s := range []*script{scriptTryEnter, scriptRecord, scriptSnapshot, scriptRetryAfter} {
		if err := s.Load(ctx, b.c).Err(); err != nil {
			return wrapErr(ctx, "Preload", "", err)
		}
	}
	return nil
}

// TryEnter asks whether a call to source may run now: one script, one round
// trip.
func (b *Breaker) TryEnter(ctx context.Context, source string) (gate.Decision, error) {
	args, nonce := b.policy, probeNonce(ctx)
	if nonce != 0 {
		args = append(args[:len(args):len(args)], nonce)
	}
	keys := b.Keys(source)
	v, err := runScript(ctx, b.c, scriptTryEnter, keys, args...).Int64Slice()
	if err != nil {
		b.forgetProbe(ctx, keys, nonce)
		return gate.Decision{}, wrapErr(ctx, "TryEnter", source, err)
	}
	if len(v) != 7 {
		return gate.Decision{}, replyError("TryEnter", source, v, 7)
	}
	st, err := state("TryEnter", source, v[1])
	if err != nil {
		return gate.Decision{}, err
	}
	return gate.Decision{
		Allowed:    v[0] == 1,
		State:      st,
		RetryAfter: micros(v[2]),
		Probe:      v[3] == 1,
		Token:      uint64(v[4]),
		Generation: uint64(v[5]),
		Forced:     gate.Force(v[6]),
	}, nil
}

// probeNonce returns a new nonce for a TryEnter under ctx, or 0 for a ctx
// that never ends: only a caller who can give up on the round trip can lose
// a probe lease with its reply. Nonces are unique across processes without
// a round trip: a random per-process start and a counter.
func probeNonce(ctx context.Context) int64 {
	if ctx.Done() == nil {
		return 0
	}
	n := int64(nonceSeq.Add(1) & (1<<62 - 1))
	if n == 0 {
		n = 1
	}
	return n
}

var nonceSeq = func() *atomic.Uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	s := new(atomic.Uint64)
	s.Store(binary.LittleEndian.Uint64(b[:]))
	return s
}()

// forgetProbe frees, off the caller's path, the probe lease that a TryEnter
// or Admit script whose round trip the caller gave up on (gaveUp) may have
// been granted: the script may have run with only its reply lost, and its
// lease would hold the source's probe, fleet-wide, until ProbeTTL, every
// other caller rejected HalfOpen. The release is a no-op when no lease was
// granted to nonce. A round trip that failed for any other reason is not
// followed up: the release would fail too, and the lease expires by itself.
func (b *Breaker) forgetProbe(ctx context.Context, keys []string, nonce int64) {
	if nonce == 0 || !gaveUp(ctx) {
		return
	}
	if b.forgetting.Add(1) > maxForgetting {
		b.forgetting.Add(-1)
		return
	}
	go func() {
		defer b.forgetting.Add(-1)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
		defer cancel()
		_ = runScript(rctx, b.c, scriptProbeForget, keys, nonce).Err()
	}()
}

// Record reports the outcome of a call admitted by d: one script, one round
// trip. An Outcome outside the four defined values returns
// gate.ErrUnknownOutcome without touching Redis.
func (b *Breaker) Record(ctx context.Context, source string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if !o.Valid() {
		return gate.Update{}, gate.ErrUnknownOutcome
	}
	args := make([]any, 0, len(b.policy)+4)
	args = append(args, b.policy...)
	args = append(args, strconv.Itoa(int(o)), flag(d.Allowed), flag(d.Probe), strconv.FormatUint(d.Token, 10))
	v, err := runScript(ctx, b.c, scriptRecord, b.Keys(source), args...).Int64Slice()
	if err != nil {
		return gate.Update{}, wrapErr(ctx, "Record", source, err)
	}
	if len(v) != 5 {
		return gate.Update{}, replyError("Record", source, v, 5)
	}
	st, err := state("Record", source, v[1])
	if err != nil {
		return gate.Update{}, err
	}
	return gate.Update{
		Applied:    v[0] == 1,
		State:      st,
		RetryAfter: micros(v[2]),
		Generation: uint64(v[3]),
		Forced:     gate.Force(v[4]),
	}, nil
}

// Snapshot reads source's record without moving it: one script, one round
// trip.
func (b *Breaker) Snapshot(ctx context.Context, source string) (gate.Snapshot, error) {
	v, err := runScript(ctx, b.c, scriptSnapshot, b.Keys(source), b.policy...).Int64Slice()
	if err != nil {
		return gate.Snapshot{}, wrapErr(ctx, "Snapshot", source, err)
	}
	if len(v) != 12 {
		return gate.Snapshot{}, replyError("Snapshot", source, v, 12)
	}
	st, err := state("Snapshot", source, v[0])
	if err != nil {
		return gate.Snapshot{}, err
	}
	s := gate.Snapshot{
		State:               st,
		Generation:          uint64(v[1]),
		ConsecutiveFailures: int(v[2]),
		ProbeSuccesses:      int(v[3]),
		WindowCalls:         int(v[4]),
		WindowFailures:      int(v[5]),
		ProbesInFlight:      int(v[6]),
		Cooldown:            micros(v[7]),
		RetryAfter:          micros(v[9]),
		Forced:              gate.Force(v[10]),
		ProbeFailures:       int(v[11]),
	}
	if st == gate.Open && v[8] > 0 { // a forced Open has no end
		s.OpenUntil = time.UnixMicro(v[8])
	}
	return s, nil
}

// RetryAfter returns the minimum RetryAfter over sources (0 for none) and
// moves no state. Keys of different sources live on different cluster slots,
// so no single script may read them all; instead one EVALSHA per distinct
// source goes out in one pipeline. On a single node (or sentinel) that is one
// network round trip; on a cluster go-redis splits the pipeline per node and
// sends the parts in parallel, one round trip to each node involved. Only
// after a script cache flush does a second round trip (EVAL of the scripts
// the server lost) follow.
func (b *Breaker) RetryAfter(ctx context.Context, sources []string) (time.Duration, error) {
	sources = distinct(sources)
	switch len(sources) {
	case 0:
		return 0, nil
	case 1:
		v, err := runScript(ctx, b.c, scriptRetryAfter, b.Keys(sources[0]), b.policy...).Int64()
		if err != nil {
			return 0, wrapErr(ctx, "RetryAfter", sources[0], err)
		}
		return micros(v), nil
	}
	cmds := b.pipelineRetryAfter(ctx, sources, scriptRetryAfter.EvalSha)
	var lost []int // sources whose EVALSHA met NOSCRIPT
	for i, c := range cmds {
		if goredis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		again := make([]string, len(lost))
		for j, i := range lost {
			again[j] = sources[i]
		}
		for j, c := range b.pipelineRetryAfter(ctx, again, scriptRetryAfter.Eval) {
			cmds[lost[j]] = c
		}
	}
	least := time.Duration(-1)
	for i, c := range cmds {
		v, err := c.Int64()
		if err != nil {
			return 0, wrapErr(ctx, "RetryAfter", sources[i], err)
		}
		if ra := micros(v); least < 0 || ra < least {
			least = ra
		}
	}
	return least, nil
}

type evalFunc func(ctx context.Context, c goredis.Scripter, keys []string, args ...any) *goredis.Cmd

// pipelineRetryAfter sends one retry_after script per source in one
// pipeline. Per-command errors stay on the commands for the caller to read.
func (b *Breaker) pipelineRetryAfter(ctx context.Context, sources []string, eval evalFunc) []*goredis.Cmd {
	pipe := b.c.Pipeline()
	cmds := make([]*goredis.Cmd, len(sources))
	for i, s := range sources {
		cmds[i] = eval(ctx, pipe, b.Keys(s), b.policy...)
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	return cmds
}

// distinct drops repeated names, keeping the first occurrence's order.
func distinct(sources []string) []string {
	if len(sources) < 2 {
		return sources
	}
	seen := make(map[string]struct{}, len(sources))
	out := make([]string, 0, len(sources))
	for _, s := range sources {
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// micros is a script's µs as a Duration: never negative, and the longest
// whole-µs Duration for more µs than a Duration holds (a cooldown near
// math.MaxInt64 would otherwise wrap to a negative RetryAfter).
func micros(v int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Microsecond)
	return time.Duration(min(max(v, 0), most)) * time.Microsecond
}

func state(op, source string, v int64) (gate.State, error) {
	if v < int64(gate.Closed) || v > int64(gate.HalfOpen) {
		return 0, fmt.Errorf("pgw/gate/redis: %s %q: record holds unknown state %d (legal: 0 closed, 1 open, 2 half_open)", op, source, v)
	}
	return gate.State(v), nil
}

// replyShapeError is a script reply that is not the integers expected.
type replyShapeError struct {
	reply any
	want  int
}

func (e *replyShapeError) Error() string {
	return fmt.Sprintf("unexpected script reply %v (want %d integers)", e.reply, e.want)
}

// ints reads cmd's reply, an array of len(v) integers, into v without
// allocating (Cmd.Int64Slice makes a slice per reply). A reply of another
// shape is a *replyShapeError; a command error is returned as it is.
func ints(cmd *goredis.Cmd, v []int64) error {
	vals, err := cmd.Slice()
	if err != nil {
		return err
	}
	if len(vals) != len(v) {
		return &replyShapeError{reply: vals, want: len(v)}
	}
	for i, x := range vals {
		n, ok := x.(int64)
		if !ok {
			return &replyShapeError{reply: vals, want: len(v)}
		}
		v[i] = n
	}
	return nil
}

func replyError(op, source string, v []int64, want int) error {
	return fmt.Errorf("pgw/gate/redis: %s %q: unexpected script reply %v (want %d integers)", op, source, v, want)
}
