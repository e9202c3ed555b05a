package redis_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// shortPolicy is a policy of real short durations for real-Redis tests.
func shortPolicy() gate.Policy {
	return gate.Policy{
		ConsecutiveFailures: 2,
		Cooldown:            150 * time.Millisecond,
		MaxCooldown:         600 * time.Millisecond,
		ProbeTTL:            250 * time.Millisecond,
	}
}

func TestNewBreakerRejectsInvalidPolicy(t *testing.T) {
	_, _, c := newMini(t)
	_, err := redis.NewBreaker(c, "chat", gate.Policy{Cooldown: -time.Second, HalfOpenProbes: -1})
	var pe *gate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Len(t, pe.Problems, 2)
}

func TestNewBreakerRejectsInvalidArguments(t *testing.T) {
	_, _, c := newMini(t)
	cases := []struct {
		name   string
		client goredis.UniversalClient
		scope  string
		opts   []redis.Option
		arg    string
	}{
		{"NilClient", nil, "chat", nil, "client"},
		{"EmptyScope", c, "", nil, "scope"},
		{"ScopeWithBrace", c, "ch{at", nil, "scope"},
		{"EmptyPrefix", c, "chat", []redis.Option{redis.WithPrefix("")}, "prefix"},
		{"PrefixWithBrace", c, "chat", []redis.Option{redis.WithPrefix("a}b")}, "prefix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redis.NewBreaker(tc.client, tc.scope, gate.Policy{}, tc.opts...)
			var ae *redis.ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.arg, ae.Name)
			assert.Contains(t, err.Error(), "legal:")
		})
	}
}

func TestKeysShareTheSourceHashTag(t *testing.T) {
	_, _, c := newMini(t)
	b, err := redis.NewBreaker(c, "CHAT", gate.Policy{})
	require.NoError(t, err)
	assert.Equal(t, []string{"pgw:{chat:openai}:cb", "pgw:{chat:openai}:probes"}, b.Keys("openai"))
	b, err = redis.NewBreaker(c, "ocr", gate.Policy{}, redis.WithPrefix("prod:pgw"))
	require.NoError(t, err)
	assert.Equal(t, []string{"prod:pgw:{ocr:eu-1}:cb", "prod:pgw:{ocr:eu-1}:probes"}, b.Keys("eu-1"))
}

// Every key gets a TTL of 2 × max(MaxCooldown, ProbeTTL, Window); an
// abandoned source vanishes and then reads as a fresh Closed record.
func TestKeysExpireSoAbandonedSourcesVanish(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, MaxCooldown: 4 * time.Second, ProbeTTL: 3 * time.Second}
	b, clk, m := miniGate(t, p)
	ctx := t.Context()
	assert.Equal(t, 8*time.Second, b.KeyTTL())

	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = b.Record(ctx, "s", d, gate.Failure) // trips: Open
	require.NoError(t, err)
	clk.Advance(time.Second)
	d, err = b.TryEnter(ctx, "s") // probe: the lease set exists too
	require.NoError(t, err)
	require.True(t, d.Probe)
	keys := b.Keys("s")
	for _, k := range keys {
		assert.Equal(t, 8*time.Second, m.TTL(k), "TTL of %s", k)
	}

	clk.Advance(8 * time.Second)
	for _, k := range keys {
		assert.False(t, m.Exists(k), "%s outlived its TTL", k)
	}
	s, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, gate.Snapshot{State: gate.Closed, Cooldown: time.Second}, s)
}

// A Closed admission refreshes the TTL, so a record in use never expires
// under a call in flight.
func TestClosedAdmissionRefreshesTTL(t *testing.T) {
	b, clk, m := miniGate(t, gate.Policy{Cooldown: time.Second, MaxCooldown: 2 * time.Second, ProbeTTL: time.Second})
	ctx := t.Context()
	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = b.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	key := b.Keys("s")[0]
	clk.Advance(3 * time.Second)
	require.Equal(t, time.Second, m.TTL(key))
	_, err = b.TryEnter(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, 4*time.Second, m.TTL(key))
}

// The scripts read Redis TIME, never the client's clock: miniredis set to
// 2001 puts openUntil in 2001.
func TestUsesRedisServerTimeOnly(t *testing.T) {
	b, _, m := miniGate(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second})
	server := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	m.SetTime(server)
	ctx := t.Context()
	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	u, err := b.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
	assert.Equal(t, time.Second, u.RetryAfter)
	s, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.True(t, server.Add(time.Second).Equal(s.OpenUntil), "OpenUntil %v", s.OpenUntil)
}

func TestRecordUnknownOutcomeSendsNothing(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	rt := &roundTrips{}
	c.AddHook(rt)
	b, err := redis.NewBreaker(c, uniqueScope(), gate.Policy{})
	require.NoError(t, err)
	_, err = b.Record(t.Context(), "s", gate.Decision{Allowed: true}, gate.Outcome(0))
	require.ErrorIs(t, err, gate.ErrUnknownOutcome)
	assert.Zero(t, rt.trips.Load())
}

// roundTrips counts network round trips (a command or a pipeline) and the
// commands in them. The handshake go-redis sends on a new connection (HELLO,
// CLIENT SETINFO) passes the same hooks; it belongs to the connection, not
// to the gate operation, so it is not counted.
type roundTrips struct {
	trips atomic.Int64
	cmds  atomic.Int64
}

func handshake(cmd goredis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }

func (h *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !handshake(cmd) {
			h.trips.Add(1)
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			h.trips.Add(1)
			h.cmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// take returns the counts since the last take.
func (h *roundTrips) take() (trips, cmds int64) { return h.trips.Swap(0), h.cmds.Swap(0) }

// The Redis gate's budget: exactly one round trip per gate operation on a single node,
// on every path of the state machine.
func TestOneRoundTripPerOperation(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	b, err := redis.NewBreaker(c, uniqueScope(), shortPolicy())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Preload(ctx))
	rt := &roundTrips{}
	c.AddHook(rt)

	one := func(what string, want int64) {
		t.Helper()
		trips, cmds := rt.take()
		assert.Equal(t, int64(1), trips, "%s: round trips", what)
		assert.Equal(t, want, cmds, "%s: commands", what)
	}
	d, err := b.TryEnter(ctx, "a")
	require.NoError(t, err)
	one("TryEnter Closed", 1)
	_, err = b.Record(ctx, "a", d, gate.Failure)
	require.NoError(t, err)
	one("Record Failure", 1)
	d, err = b.TryEnter(ctx, "a")
	require.NoError(t, err)
	one("TryEnter Closed", 1)
	u, err := b.Record(ctx, "a", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
	one("Record Failure that trips", 1)
	d, err = b.TryEnter(ctx, "a")
	require.NoError(t, err)
	require.False(t, d.Allowed)
	one("TryEnter Open rejection", 1)
	_, err = b.Snapshot(ctx, "a")
	require.NoError(t, err)
	one("Snapshot", 1)
	_, err = b.RetryAfter(ctx, []string{"a"})
	require.NoError(t, err)
	one("RetryAfter of one source", 1)
	_, err = b.RetryAfter(ctx, []string{"a", "b", "c", "b"})
	require.NoError(t, err)
	one("RetryAfter of three sources (one pipeline)", 3)

	time.Sleep(shortPolicy().Cooldown) // real time: let the cooldown pass
	d, err = b.TryEnter(ctx, "a")
	require.NoError(t, err)
	require.True(t, d.Probe)
	one("TryEnter probe grant", 1)
	_, err = b.TryEnter(ctx, "a")
	require.NoError(t, err)
	one("TryEnter HalfOpen rejection", 1)
	u, err = b.Record(ctx, "a", d, gate.Success)
	require.NoError(t, err)
	require.Equal(t, gate.Closed, u.State)
	one("Record probe Success", 1)
	_, err = b.Record(ctx, "a", d, gate.Success)
	require.NoError(t, err)
	one("Record fencing miss", 1)
}

// Without Preload the first run of a script costs NOSCRIPT + EVAL; after
// that, one round trip.
func TestFirstCallWithoutPreloadLoadsTheScript(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	b, err := redis.NewBreaker(c, uniqueScope(), gate.Policy{})
	require.NoError(t, err)
	require.NoError(t, c.Ping(t.Context()).Err())
	rt := &roundTrips{}
	c.AddHook(rt)
	_, err = b.Snapshot(t.Context(), "s")
	require.NoError(t, err)
	trips, _ := rt.take()
	assert.Equal(t, int64(2), trips, "EVALSHA → NOSCRIPT, then EVAL")
	_, err = b.Snapshot(t.Context(), "s")
	require.NoError(t, err)
	trips, _ = rt.take()
	assert.Equal(t, int64(1), trips)
}

// SCRIPT FLUSH mid-run: every operation keeps working (EVAL on NOSCRIPT),
// the multi-source RetryAfter pipeline included, and state is intact.
func TestScriptFlushMidRunKeepsWorking(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	scriptFlushKeepsWorking(t, c, func() { require.NoError(t, c.ScriptFlush(t.Context()).Err()) })
}

func scriptFlushKeepsWorking(t *testing.T, c goredis.UniversalClient, flush func()) {
	t.Helper()
	p := shortPolicy()
	p.Cooldown = 10 * time.Second // stays Open for the whole test
	p.MaxCooldown = 10 * time.Second
	b, err := redis.NewBreaker(c, uniqueScope(), p)
	require.NoError(t, err)
	ctx := t.Context()
	trip := func(src string) {
		for range p.ConsecutiveFailures {
			d, err := b.TryEnter(ctx, src)
			require.NoError(t, err)
			_, err = b.Record(ctx, src, d, gate.Failure)
			require.NoError(t, err)
		}
	}
	trip("a")
	_, err = b.RetryAfter(ctx, []string{"a", "b"})
	require.NoError(t, err)

	for round := range 3 {
		flush()
		ra, err := b.RetryAfter(ctx, []string{"a", "b", "c"})
		require.NoError(t, err, "round %d: RetryAfter after SCRIPT FLUSH", round)
		assert.Equal(t, time.Duration(0), ra, "b and c are Closed")
		flush()
		ra, err = b.RetryAfter(ctx, []string{"a", "a"})
		require.NoError(t, err)
		assert.Greater(t, ra, 9*time.Second, "a is still Open")
		flush()
		d, err := b.TryEnter(ctx, "a")
		require.NoError(t, err, "TryEnter after SCRIPT FLUSH")
		assert.Equal(t, gate.Open, d.State)
		flush()
		d, err = b.TryEnter(ctx, "b")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		flush()
		u, err := b.Record(ctx, "b", d, gate.Success)
		require.NoError(t, err, "Record after SCRIPT FLUSH")
		assert.True(t, u.Applied)
		flush()
		s, err := b.Snapshot(ctx, "a")
		require.NoError(t, err, "Snapshot after SCRIPT FLUSH")
		assert.Equal(t, gate.Open, s.State)
	}
}

// SCRIPT FLUSH while callers are in the middle of their work: no call fails.
func TestScriptFlushUnderConcurrentCallersKeepsWorking(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	b, err := redis.NewBreaker(c, uniqueScope(), gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	ctx := t.Context()
	stop := make(chan struct{})
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			src := []string{"a", "b"}[i%2]
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := b.TryEnter(ctx, src)
				if !assert.NoError(t, err) {
					return
				}
				_, err = b.Record(ctx, src, d, []gate.Outcome{gate.Success, gate.Failure}[i%2])
				assert.NoError(t, err)
				_, err = b.RetryAfter(ctx, []string{"a", "b"})
				assert.NoError(t, err)
				calls.Add(1)
			}
		})
	}
	for range 20 {
		require.NoError(t, c.ScriptFlush(ctx).Err())
		// Let some calls run between flushes (bounded, in case callers died).
		deadline := time.Now().Add(2 * time.Second)
		for n := calls.Load(); calls.Load() < n+4 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	close(stop)
	wg.Wait()
	s, err := b.Snapshot(ctx, "b")
	require.NoError(t, err)
	assert.Positive(t, s.ConsecutiveFailures, "the failures of b were counted")
}
