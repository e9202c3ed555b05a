package redis_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// fastFailClient gives up at once on a dead server: no command retries, one
// dial attempt.
func fastFailClient(t testing.TB, addr string) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{
		Addr:               addr,
		MaxRetries:         -1,
		DialerRetries:      1,
		DialerRetryTimeout: time.Millisecond,
		DialTimeout:        500 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// logSink keeps the records a slog.Logger emits.
type logSink struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

// count returns how many records of level were logged.
func (s *logSink) count(level slog.Level) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.recs {
		if r.Level == level {
			n++
		}
	}
	return n
}

// attrs returns the attributes of the records of level, by key, the
// last record's value winning.
func (s *logSink) attrs(level slog.Level) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{}
	for _, r := range s.recs {
		if r.Level == level {
			r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		}
	}
	return m
}

// failover builds a Failover on a Redis breaker and a memory fallback with
// the same policy.
func failover(t *testing.T, c goredis.UniversalClient, mode redis.Mode, opts ...redis.FailoverOption) (*redis.Failover, *redis.Breaker, *logSink) {
	t.Helper()
	p := shortPolicy()
	primary, err := redis.NewBreaker(c, uniqueScope(), p)
	require.NoError(t, err)
	fallback, err := memory.NewBreaker(p)
	require.NoError(t, err)
	sink := &logSink{}
	f, err := redis.NewFailover(primary, fallback, mode, slog.New(sink), opts...)
	require.NoError(t, err)
	return f, primary, sink
}

// goroutinesSettle waits a short bounded time for the goroutine count to drop
// back to at most base (exiting goroutines take a moment to be reaped).
func goroutinesSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "goroutines leaked")
}

const fallbackBit = uint64(1) << 63

func TestFailOpenServesFromFallbackAndReturnsToRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	c := fastFailClient(t, srv.Addr)
	f, primary, logs := failover(t, c, redis.FailOpen, redis.WithRetryInterval(0))
	ctx := t.Context()

	onRedis, err := f.TryEnter(ctx, "s")
	require.NoError(t, err)
	require.True(t, onRedis.Allowed)
	assert.Zero(t, onRedis.Token&fallbackBit, "a Redis decision")
	assert.Zero(t, onRedis.Generation&fallbackBit, "a Redis generation")
	assert.False(t, f.Degraded())

	srv.Stop()
	// The outcome of a Redis decision is lost with Redis: not applied, no
	// error, the fallback's view.
	u, err := f.Record(ctx, "s", onRedis, gate.Success)
	require.NoError(t, err)
	assert.False(t, u.Applied)
	assert.Equal(t, gate.Closed, u.State)
	assert.Equal(t, fallbackBit, u.Generation, "the fallback's generation 0, marked as the fallback's")
	assert.True(t, f.Degraded())

	// Served locally: the fallback counts failures and trips.
	for i := range shortPolicy().ConsecutiveFailures {
		d, err := f.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, d.Allowed, "admission %d served by the fallback", i)
		assert.NotZero(t, d.Token&fallbackBit, "a fallback decision is marked")
		assert.NotZero(t, d.Generation&fallbackBit, "so is its generation")
		u, err := f.Record(ctx, "s", d, gate.Failure)
		require.NoError(t, err)
		assert.True(t, u.Applied, "a fallback decision is recorded to the fallback")
		assert.NotZero(t, u.Generation&fallbackBit, "the fallback's Update is marked")
	}
	d, err := f.TryEnter(ctx, "s")
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, gate.Open, d.State, "the fallback opened")
	ra, err := f.RetryAfter(ctx, []string{"s", "other"})
	require.NoError(t, err)
	assert.Zero(t, ra, "other is Closed")
	s, err := f.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, gate.Open, s.State)
	assert.Equal(t, d.Generation&^fallbackBit, s.Generation, "the fallback's snapshot: its own generation, unmarked")
	local, err := f.TryEnter(ctx, "t") // held across the recovery
	require.NoError(t, err)
	require.True(t, local.Allowed)
	assert.Equal(t, 1, logs.count(slog.LevelWarn), "one log line per outage")

	srv.Restart(t)
	d, err = f.TryEnter(ctx, "s")
	require.NoError(t, err)
	assert.True(t, d.Allowed, "back on Redis, which lost its data on restart: Closed")
	assert.Zero(t, d.Token&fallbackBit, "a Redis decision again")
	assert.Zero(t, d.Generation&fallbackBit, "a Redis generation again")
	assert.False(t, f.Degraded())
	assert.Equal(t, 1, logs.count(slog.LevelInfo), "recovery is logged once")
	u, err = f.Record(ctx, "s", d, gate.Success)
	require.NoError(t, err)
	assert.True(t, u.Applied)

	// The decision the fallback granted during the outage is still recorded
	// to the fallback, not to Redis.
	u, err = f.Record(ctx, "t", local, gate.Success)
	require.NoError(t, err)
	assert.True(t, u.Applied)
	assert.NotZero(t, u.Generation&fallbackBit, "answered by the fallback")
	n, err := c.Exists(ctx, primary.Keys("t")...).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a fallback outcome reached Redis")

	// A second outage logs once more.
	srv.Stop()
	for range 3 {
		_, err = f.TryEnter(ctx, "s")
		require.NoError(t, err)
	}
	assert.Equal(t, 2, logs.count(slog.LevelWarn))

	require.NoError(t, c.Close())
	goroutinesSettle(t, base)
}

// Many callers through an outage and a recovery: no panic, no race, one
// warning, every decision recorded where it came from.
func TestFailOpenUnderConcurrentCallers(t *testing.T) {
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	c := fastFailClient(t, srv.Addr)
	f, _, logs := failover(t, c, redis.FailOpen, redis.WithRetryInterval(time.Millisecond))
	ctx := t.Context()

	run := func() {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				<-start
				for range 20 {
					d, err := f.TryEnter(ctx, "s")
					assert.NoError(t, err)
					if d.Allowed {
						_, err = f.Record(ctx, "s", d, gate.Success)
						assert.NoError(t, err)
					}
				}
			})
		}
		close(start)
		wg.Wait()
	}
	run()
	srv.Stop()
	run()
	assert.True(t, f.Degraded())
	srv.Restart(t)
	// The retry interval is 1ms: keep calling until one call finds Redis.
	deadline := time.Now().Add(5 * time.Second)
	for f.Degraded() && time.Now().Before(deadline) {
		run()
	}
	assert.False(t, f.Degraded(), "back on Redis")
	assert.Equal(t, 1, logs.count(slog.LevelWarn))
	assert.Equal(t, 1, logs.count(slog.LevelInfo))

	require.NoError(t, c.Close())
	goroutinesSettle(t, base)
}

// During an outage only one call per retry interval tries Redis; the rest go
// straight to the fallback.
func TestFailOpenRetriesRedisOncePerInterval(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	rt := &roundTrips{}
	c.AddHook(rt)
	f, _, _ := failover(t, c, redis.FailOpen, redis.WithRetryInterval(time.Hour))
	ctx := t.Context()
	srv.Stop()
	_, err := f.TryEnter(ctx, "s")
	require.NoError(t, err)
	require.True(t, f.Degraded())
	rt.take()
	srv.Restart(t)
	for range 10 {
		_, err := f.TryEnter(ctx, "s")
		require.NoError(t, err)
	}
	trips, _ := rt.take()
	assert.Zero(t, trips, "calls within the retry interval must not touch Redis")
	assert.True(t, f.Degraded())
}

func TestFailClosedSaysRedisIsUnreachable(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	primary, err := redis.NewBreaker(c, uniqueScope(), shortPolicy())
	require.NoError(t, err)
	f, err := redis.NewFailover(primary, nil, redis.FailClosed, nil)
	require.NoError(t, err)
	ctx := t.Context()
	d, err := f.TryEnter(ctx, "s")
	require.NoError(t, err)
	srv.Stop()

	check := func(op string, err error) {
		t.Helper()
		require.Error(t, err, op)
		assert.ErrorIs(t, err, redis.ErrUnreachable, op)
		var ue *redis.UnreachableError
		require.ErrorAs(t, err, &ue, op)
		assert.Equal(t, op, ue.Op)
		assert.Contains(t, err.Error(), "redis is unreachable", op)
	}
	_, err = f.TryEnter(ctx, "s")
	check("TryEnter", err)
	_, err = f.Record(ctx, "s", d, gate.Success)
	check("Record", err)
	_, err = f.RetryAfter(ctx, []string{"s", "t"})
	check("RetryAfter", err)
	_, err = f.Snapshot(ctx, "s")
	check("Snapshot", err)
}

// The caller's own cancellation is not an outage.
func TestFailOpenCallerCancellationIsNotAnOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	f, _, logs := failover(t, c, redis.FailOpen)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.TryEnter(ctx, "s")
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, redis.ErrUnreachable)
	assert.False(t, f.Degraded())
	assert.Zero(t, logs.count(slog.LevelWarn))
}

// A caller deadline passing while Redis is slow is the caller's, not an
// outage (go-redis reports it as an i/o timeout).
func TestFailOpenCallerDeadlineOnSlowRedisIsNotAnOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	f, _, logs := failover(t, c, redis.FailOpen)
	_, err := f.Snapshot(t.Context(), "s") // connect and load the script first
	require.NoError(t, err)
	_, err = srv.Do("CLIENT", "PAUSE", "300", "ALL")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err = f.TryEnter(ctx, "s")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, redis.ErrUnreachable)
	assert.False(t, f.Degraded())
	assert.Zero(t, logs.count(slog.LevelWarn))
}

func TestNewFailoverRejectsBadArguments(t *testing.T) {
	_, _, c := newMini(t)
	primary, err := redis.NewBreaker(c, "chat", gate.Policy{})
	require.NoError(t, err)
	cases := []struct {
		name     string
		primary  gate.ProviderGate
		fallback gate.ProviderGate
		mode     redis.Mode
		arg      string
	}{
		{"NilPrimary", nil, gate.Noop{}, redis.FailOpen, "primary"},
		{"FailOpenWithoutFallback", primary, nil, redis.FailOpen, "fallback"},
		{"UnknownMode", primary, gate.Noop{}, redis.Mode(9), "mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redis.NewFailover(tc.primary, tc.fallback, tc.mode, nil)
			var ae *redis.ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.arg, ae.Name)
		})
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want redis.Mode
	}{{"fail_open", redis.FailOpen}, {"fail_closed", redis.FailClosed}} {
		m, err := redis.ParseMode(tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.want, m)
		assert.Equal(t, tc.in, m.String())
	}
	_, err := redis.ParseMode("FAIL_OPEN")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "fail_open, fail_closed"), err.Error())
}
