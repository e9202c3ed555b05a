package redis_test

import (
	"log/slog"
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

// TestBudgetContract runs the advertised-budget contract on miniredis, whose
// TIME follows the test's clock: the script decides like the memory gate,
// to the µs.
func TestBudgetContract(t *testing.T) {
	contracttest.RunBudget(t, func(t *testing.T) (gate.BudgetGate, contracttest.Clock) {
		_, clk, c := newMini(t)
		b, err := redis.NewBudget(c, "CHAT", redis.WithPrefix("t"))
		require.NoError(t, err)
		return b, clk
	})
}

// TestBudgetKeyLivesInTheSourcesSlotAndExpiresAWindowAfterItsReset: one
// hash beside the source's breaker and quota keys, gone once a window past
// its last reset.
func TestBudgetKeyLivesInTheSourcesSlotAndExpiresAWindowAfterItsReset(t *testing.T) {
	m, _, c := newMini(t)
	b, err := redis.NewBudget(c, "CHAT", redis.WithPrefix("t"))
	require.NoError(t, err)
	q, err := redis.NewQuota(c, "CHAT", map[string]gate.Limits{"eu-1": {RPM: 60}}, redis.WithPrefix("t"))
	require.NoError(t, err)
	require.Equal(t, "t:{chat:eu-1}:advertised", b.Key("eu-1"))
	require.Contains(t, q.Keys("eu-1")[0], "{chat:eu-1}", "the same hash tag as the quota")
	require.NoError(t, b.Refresh(t.Context(), "eu-1", gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 60, Remaining: 10, Reset: 30 * time.Second}, Tokens: gate.UnknownWindow}))
	ttl := m.TTL(b.Key("eu-1"))
	require.Greater(t, ttl, 60*time.Second, "the limit outlives the reset by a window")
	require.LessOrEqual(t, ttl, 62*time.Second)
}

// TestBudgetFailoverServesLocallyDuringAnOutage: with Redis gone the budget
// is served from the local fallback, which knows what was last advertised,
// and Redis is tried again once per retry interval.
func TestBudgetFailoverServesLocallyDuringAnOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	rb, err := redis.NewBudget(c, uniqueScope())
	require.NoError(t, err)
	f, err := redis.NewBudgetFailover(rb, memory.NewBudget(), slog.New(slog.DiscardHandler), redis.WithRetryInterval(time.Hour))
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, f.Refresh(ctx, "s", gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 10, Remaining: 1, Reset: time.Minute}, Tokens: gate.UnknownWindow}))
	srv.Stop()

	d, err := f.Take(ctx, "s", 0)
	require.NoError(t, err, "the outage is served, not returned")
	assert.True(t, d.Allowed, "the local budget's one request")
	d, err = f.Take(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the local budget is spent too")
	assert.True(t, f.Degraded())
	assert.LessOrEqual(t, d.RetryAfter, time.Minute)
	assert.Greater(t, d.RetryAfter, 45*time.Second, "the reset last advertised (the outage took a few seconds to detect)")
}
