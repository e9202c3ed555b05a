package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

func TestForceContractMiniredis(t *testing.T) {
	contracttest.RunBreakerForce(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, clk, _ := miniGate(t, p)
		return b, clk
	})
}

func TestForceContractRedisServer(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	contracttest.RunBreakerForce(t, realBreakers(c))
}

// An override lasts until it is cleared: a forced record keeps no TTL, even
// through the writes of calls on a forced Closed source; the reset gives the
// TTL back.
func TestForcedRecordKeepsNoTTLUntilReset(t *testing.T) {
	p := gate.Policy{Cooldown: time.Second, MaxCooldown: 2 * time.Second, ProbeTTL: time.Second}
	b, clk, m := miniGate(t, p)
	ctx := t.Context()
	key := b.Keys("s")[0]

	require.NoError(t, b.Force(ctx, "s", gate.ForceOpen))
	assert.Equal(t, time.Duration(0), m.TTL(key), "forced Open: no TTL")
	clk.Advance(10 * b.KeyTTL())
	s, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, gate.ForceOpen, s.Forced, "a forced Open outlives the key TTL")

	require.NoError(t, b.Force(ctx, "s", gate.ForceClosed))
	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = b.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), m.TTL(key), "forced Closed: writes give no TTL back")

	require.NoError(t, b.Force(ctx, "s", gate.ForceNone))
	assert.Equal(t, b.KeyTTL(), m.TTL(key), "reset: the TTL is back")
}

func TestForceIsOneRoundTrip(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	b, err := redis.NewBreaker(c, uniqueScope(), shortPolicy())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Force(ctx, "warm", gate.ForceNone)) // loads the script
	rt := &roundTrips{}
	c.AddHook(rt)
	for _, f := range []gate.Force{gate.ForceOpen, gate.ForceClosed, gate.ForceNone} {
		require.NoError(t, b.Force(ctx, "a", f))
		trips, cmds := rt.take()
		assert.Equal(t, int64(1), trips, "Force(%v): round trips", f)
		assert.Equal(t, int64(1), cmds, "Force(%v): commands", f)
	}
	s, err := b.Snapshot(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, gate.ForceNone, s.Forced)
}

func TestFailoverForceReachesRedis(t *testing.T) {
	b, _, _ := miniGate(t, gate.Policy{})
	fb, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	f, err := redis.NewFailover(b, fb, redis.FailOpen, nil)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, f.Force(ctx, "s", gate.ForceOpen))
	s, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, gate.ForceOpen, s.Forced, "the override is in Redis")
	local, err := fb.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, gate.ForceNone, local.Forced, "the fallback is not forced")

	f, err = redis.NewFailover(gate.Noop{}, nil, redis.FailClosed, nil)
	require.NoError(t, err)
	err = f.Force(ctx, "s", gate.ForceOpen)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not implement gate.Forcer")
}

func TestForceRejectsUnknownValueWithoutRoundTrip(t *testing.T) {
	b, _, _ := miniGate(t, gate.Policy{})
	err := b.Force(t.Context(), "s", gate.Force(5))
	var fe *gate.ForceError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "s", fe.Source)
}

// An operator tool forces with whatever policy it has (the defaults); the
// gateway's own policy decides the cooldown afterwards.
func TestForceLeavesTheCooldownToTheGatewaysPolicy(t *testing.T) {
	_, _, c := newMini(t)
	app, err := redis.NewBreaker(c, "chat", gate.Policy{ConsecutiveFailures: 1, Cooldown: 7 * time.Second})
	require.NoError(t, err)
	tool, err := redis.NewBreaker(c, "chat", gate.Policy{})
	require.NoError(t, err)
	ctx := t.Context()
	d, err := app.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = app.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	for _, f := range []gate.Force{gate.ForceClosed, gate.ForceNone} {
		require.NoError(t, tool.Force(ctx, "s", f))
		s, err := app.Snapshot(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, 7*time.Second, s.Cooldown, "after %v", f)
	}
	d, err = app.TryEnter(ctx, "s")
	require.NoError(t, err)
	u, err := app.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, u.RetryAfter, "the next trip uses the gateway's cooldown")
}
