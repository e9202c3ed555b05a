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

// The failover pair gives a Redis admission back in one script while Redis
// answers; a fallback's admission, or any during an outage, is left to
// Record and Finish (ok false), which send each part where it belongs.
func TestFailoverPairConcludesThroughRedisAndStepsAsideForFallbacks(t *testing.T) {
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
	require.True(t, ok && d.Allowed && qd.Allowed)
	cs := []gate.Conclusion{{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: -1}}
	require.True(t, q.Conclude(ctx, b, cs))
	require.NoError(t, cs[0].Err)
	assert.True(t, cs[0].Update.Applied)
	_, _, qd, ok, err = q.Admit(ctx, b, "s", 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, qd.Allowed, "the Redis slot was freed by the conclusion")

	// A fallback's admission: not concluded here.
	fd, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	fd.Token |= fallbackBit
	assert.False(t, q.Conclude(ctx, b, []gate.Conclusion{{Source: "s", Decision: fd, Outcome: gate.Success}}))

	srv.Stop()
	_, _, _, _, _ = q.Admit(ctx, b, "s", 0) // finds the outage
	require.True(t, q.Degraded())
	assert.False(t, q.Conclude(ctx, b, cs), "steps aside in an outage")
	assert.False(t, q.Conclude(ctx, mb, cs), "another breaker: no combination")
}
