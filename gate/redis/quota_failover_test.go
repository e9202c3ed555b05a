package redis_test

import (
	"errors"
	"log/slog"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

func TestQuotaFailOpenServesFromFallbackAndReturnsToRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	c := fastFailClient(t, srv.Addr)
	limits := map[string]gate.Limits{"s": {MaxInFlight: 2}}
	primary, err := redis.NewQuota(c, uniqueScope(), limits)
	require.NoError(t, err)
	fallback, err := memory.NewQuota(limits)
	require.NoError(t, err)
	logs := &logSink{}
	f, err := redis.NewQuotaFailover(primary, fallback, redis.FailOpen, slog.New(logs), redis.WithRetryInterval(0))
	require.NoError(t, err)
	ctx := t.Context()

	onRedis, d, err := f.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.False(t, f.Degraded())

	srv.Stop()
	// The give-back of a Redis permit is dropped with Redis: no error (its
	// lease expires in Redis by itself).
	require.NoError(t, f.Release(ctx, onRedis))
	assert.True(t, f.Degraded())

	local, d, err := f.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed, "served by the fallback")
	assert.Equal(t, 1, fallback.InFlight("s"))
	require.NoError(t, f.Settle(ctx, local, 0))
	assert.Equal(t, 1, logs.count(slog.LevelWarn), "one log line per outage")

	srv.Restart(t)
	onRedis, d, err = f.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.False(t, f.Degraded(), "back on Redis")
	assert.Equal(t, 1, logs.count(slog.LevelInfo), "one line when Redis is back")

	// Each permit goes back to the gate that granted it.
	require.NoError(t, f.Release(ctx, local))
	assert.Zero(t, fallback.InFlight("s"), "the fallback's slot is free")
	require.NoError(t, f.Release(ctx, onRedis))
	n, err := c.ZCard(ctx, primary.Keys("s")[1]).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the Redis lease is released")

	// Finish, too, gives a Redis permit back to Redis.
	onRedis, d, err = f.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.NoError(t, f.Finish(ctx, onRedis, 0))
	n, err = c.ZCard(ctx, primary.Keys("s")[1]).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Finish released the Redis lease")
	goroutinesSettle(t, base)
}

func TestQuotaFailClosedSaysRedisIsUnreachable(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	primary, err := redis.NewQuota(c, uniqueScope(), map[string]gate.Limits{"s": {RPM: 10}})
	require.NoError(t, err)
	f, err := redis.NewQuotaFailover(primary, nil, redis.FailClosed, nil)
	require.NoError(t, err)
	srv.Stop()
	_, _, err = f.Acquire(t.Context(), "s", 0)
	require.Error(t, err)
	assert.True(t, errors.Is(err, redis.ErrUnreachable))
	assert.Contains(t, err.Error(), "unreachable")
}

func TestNewQuotaFailoverRejectsBadArguments(t *testing.T) {
	fallback, err := memory.NewQuota(nil)
	require.NoError(t, err)
	_, err = redis.NewQuotaFailover(nil, fallback, redis.FailOpen, nil)
	var ae *redis.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "primary", ae.Name)
	_, err = redis.NewQuotaFailover(fallback, nil, redis.FailOpen, nil)
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "fallback", ae.Name)
	_, err = redis.NewQuotaFailover(fallback, nil, redis.Mode(9), nil)
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "mode", ae.Name)
}

// A redis-server out of memory under noeviction answers, but refuses every
// write: under fail_open the quota is served locally, under fail_closed the
// caller hears ErrUnreachable — never a script error, which would fail the
// call as a bug — and either way at once, without the retry a migrating
// slot gets.
func TestQuotaOnARedisThatRefusesWrites(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	limits := map[string]gate.Limits{"s": {MaxInFlight: 2, RPM: 100}}
	newQuota := func() *redis.Quota {
		q, err := redis.NewQuota(c, uniqueScope(), limits)
		require.NoError(t, err)
		return q
	}
	fallback, err := memory.NewQuota(limits)
	require.NoError(t, err)
	open, err := redis.NewQuotaFailover(newQuota(), fallback, redis.FailOpen, nil, redis.WithRetryInterval(0))
	require.NoError(t, err)
	closed, err := redis.NewQuotaFailover(newQuota(), nil, redis.FailClosed, nil)
	require.NoError(t, err)
	ctx := t.Context()
	for _, f := range []*redis.QuotaFailover{open, closed} {
		p, d, err := f.Acquire(ctx, "s", 0) // the scripts loaded while writes are allowed
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.NoError(t, f.Release(ctx, p))
	}

	_, err = srv.Do("CONFIG", "SET", "maxmemory-policy", "noeviction")
	require.NoError(t, err)
	_, err = srv.Do("CONFIG", "SET", "maxmemory", "1")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = srv.Do("CONFIG", "SET", "maxmemory", "0") })
	require.Error(t, c.Set(ctx, "probe", "x", 0).Err(), "Redis refuses writes now")

	p, d, err := open.Acquire(ctx, "s", 0)
	require.NoError(t, err, "fail_open serves a Redis refusing writes locally")
	require.True(t, d.Allowed)
	assert.True(t, open.Degraded())
	assert.Equal(t, 1, fallback.InFlight("s"), "the permit is the fallback's")
	require.NoError(t, open.Release(ctx, p))

	_, _, err = closed.Acquire(ctx, "s", 0)
	require.ErrorIs(t, err, redis.ErrUnreachable)
	assert.NotContains(t, err.Error(), "script error")
	assert.Contains(t, err.Error(), "OOM", "the server's own reason is kept")
}
