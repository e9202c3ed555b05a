package redis_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The failover pair admits in one round trip while Redis answers, and steps
// aside (ok false, both gates in outage) when it does not, so the caller's
// TryEnter and Acquire serve from the fallbacks.
func TestFailoverPairAdmitsInOneRoundTripAndStepsAsideInAnOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := fastFailClient(t, srv.Addr)
	scope := uniqueScope()
	limits := map[string]gate.Limits{"s": {MaxInFlight: 1}}
	rb, err := redis.NewBreaker(c, scope, gate.Policy{})
	require.NoError(t, err)
	rq, err := redis.NewQuota(c, scope, limits)
	require.NoError(t, err)
	mb, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	mq, err := memory.NewQuota(limits)
	require.NoError(t, err)
	b, err := redis.NewFailover(rb, mb, redis.FailOpen, slog.New(&logSink{}), redis.WithRetryInterval(0))
	require.NoError(t, err)
	q, err := redis.NewQuotaFailover(rq, mq, redis.FailOpen, slog.New(&logSink{}), redis.WithRetryInterval(0))
	require.NoError(t, err)
	ctx := t.Context()

	d, p, qd, ok, err := q.Admit(ctx, b, "s", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, d.Allowed)
	require.True(t, qd.Allowed)
	assert.NotEmpty(t, p.ID, "a Redis lease")
	_, _, qd, ok, err = q.Admit(ctx, b, "s", 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, gate.LimitInFlight, qd.Limit, "the Redis slot is taken")

	srv.Stop()
	_, _, _, ok, err = q.Admit(ctx, b, "s", 0)
	require.NoError(t, err)
	assert.False(t, ok, "steps aside in an outage")
	assert.True(t, q.Degraded())
	assert.True(t, b.Degraded())
	_, _, _, ok, _ = q.Admit(ctx, b, "s", 0)
	assert.False(t, ok, "and stays aside during it")

	// Another breaker: no combination.
	_, _, _, ok, err = q.Admit(ctx, mb, "s", 0)
	require.NoError(t, err)
	assert.False(t, ok)
}
