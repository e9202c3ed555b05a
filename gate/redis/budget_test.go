package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
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
