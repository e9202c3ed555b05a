package redis_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A breaker failover that fails closed admits nothing during an outage, also
// when the quota beside it fails open and could combine the three local
// fallbacks: the combined admission of the outage path obeys the breaker's
// mode, as TryEnter does, instead of asking the breaker's fallback.
func TestOutageAdmitBudgetObeysAFailClosedBreaker(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	c := proxiedClient(t, px.Addr())
	prefix := "mode" + uniqueScope()
	pr := newTestProber(t, c, prefix, &logSink{})
	scope := uniqueScope()
	limits := map[string]gate.Limits{"s": {RPM: 10}}
	rb, err := redis.NewBreaker(c, scope, gate.Policy{}, redis.WithPrefix(prefix))
	require.NoError(t, err)
	rq, err := redis.NewQuota(c, scope, limits, redis.WithPrefix(prefix))
	require.NoError(t, err)
	rg, err := redis.NewBudget(c, scope, redis.WithPrefix(prefix))
	require.NoError(t, err)
	mb, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	mq, err := memory.NewQuota(limits)
	require.NoError(t, err)
	quiet := slog.New(&logSink{})
	b, err := redis.NewFailover(rb, mb, redis.FailClosed, quiet, redis.WithProber(pr))
	require.NoError(t, err)
	q, err := redis.NewQuotaFailover(rq, mq, redis.FailOpen, quiet, redis.WithProber(pr))
	require.NoError(t, err)
	bg, err := redis.NewBudgetFailover(rg, memory.NewBudget(), quiet, redis.WithProber(pr))
	require.NoError(t, err)
	ctx := t.Context()

	px.SetMode(testutil.ProxyBlackhole)
	require.True(t, waitFor(5*time.Second, pr.Down), "the prober must see the black hole")

	d, _, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 1)
	if ok {
		assert.False(t, err == nil && d.Allowed && qd.Allowed, "a fail-closed breaker admitted a call during the outage")
	}
	_, err = b.TryEnter(ctx, "s")
	require.Error(t, err, "TryEnter of the fail-closed breaker refuses during the outage")
}
