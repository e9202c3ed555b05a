package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The Redis gate passes the breaker contract unchanged on miniredis (its own
// clock, exact), on a real redis-server and on a 3-master cluster (real
// time, short durations).

// realTime is the clock of the real-Redis runs. The suites bracket every
// gate call with the test's clock, so a slow reply widens what they expect
// rather than failing them; the tolerance only sets how far before a
// boundary their "not yet" checks stand: 75ms, well under half the suites'
// 200ms cooldown, so no phase blurs into the next.
var realTime = contracttest.RealClock{Tolerance: 75 * time.Millisecond}

// realBreakers is the contract suites' breaker factory on the real server
// (single node, cluster or Sentinel) behind c.
func realBreakers(c goredis.UniversalClient) contracttest.BreakerFactory {
	return func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, err := redis.NewBreaker(c, "chat", p)
		require.NoError(t, err)
		return b, realTime
	}
}

// realQuotas is the quota suite's factory on the real server behind c.
func realQuotas(c goredis.UniversalClient) contracttest.QuotaFactory {
	return func(t *testing.T, limits map[string]gate.Limits) (gate.QuotaGate, contracttest.Clock) {
		q, err := redis.NewQuota(c, "chat", limits)
		require.NoError(t, err)
		return q, contracttest.RealClock{}
	}
}

func TestContractMiniredis(t *testing.T) {
	contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, clk, _ := miniGate(t, p)
		return b, clk
	})
}

func TestContractRedisServer(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	contracttest.RunBreaker(t, realBreakers(c))
}

// TestRedisCluster runs everything that needs a cluster on one 3-master
// cluster with a replica per master: starting one takes a few seconds.
func TestRedisCluster(t *testing.T) {
	cl := testutil.StartRedisCluster(t, testutil.WithReplicas())
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = c.Close() })

	t.Run("Contract", func(t *testing.T) {
		contracttest.RunBreaker(t, realBreakers(c))
	})

	t.Run("QuotaContract", func(t *testing.T) {
		contracttest.RunQuota(t, realQuotas(c))
	})

	t.Run("KeysOfASourceShareOneSlot", func(t *testing.T) {
		b, err := redis.NewBreaker(c, "chat", gate.Policy{})
		require.NoError(t, err)
		ctx := t.Context()
		slots := map[int64]bool{}
		for _, src := range []string{"openai", "azure-eu", "local", "x", "y", "z"} {
			keys := b.Keys(src)
			s0, err := c.ClusterKeySlot(ctx, keys[0]).Result()
			require.NoError(t, err)
			s1, err := c.ClusterKeySlot(ctx, keys[1]).Result()
			require.NoError(t, err)
			assert.Equal(t, s0, s1, "keys of %q on different slots", src)
			slots[s0] = true
		}
		assert.Greater(t, len(slots), 1, "sources spread over slots")
	})

	t.Run("SlotMigrationUnderLoadFailsNothing", func(t *testing.T) {
		slotMigrationUnderLoad(t, cl)
	})

	t.Run("MigratingSlotRunsEveryScriptWhole", func(t *testing.T) {
		migratingSlotRunsEveryScriptWhole(t, cl, c)
	})

	t.Run("ScriptFlushMidRunKeepsWorking", func(t *testing.T) {
		// SCRIPT FLUSH on every master: NOSCRIPT may come from any node.
		scriptFlushKeepsWorking(t, c, func() { require.NoError(t, c.ScriptFlush(t.Context()).Err()) })
	})

	// Last: it moves the masters' roles (and back, but let nothing depend
	// on that).
	t.Run("FailoverUnderLoadFailsNothing", func(t *testing.T) {
		clusterFailoverUnderLoad(t, cl)
	})
}

// realAdmits is the Admit suite's factory on the real server behind c.
func realAdmits(c goredis.UniversalClient) contracttest.AdmitFactory {
	return func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, contracttest.Clock) {
		b, err := redis.NewBreaker(c, "chat", p)
		require.NoError(t, err)
		q, err := redis.NewQuota(c, "chat", limits)
		require.NoError(t, err)
		return b, q, realTime
	}
}

func TestAdmitContract(t *testing.T) {
	t.Run("Miniredis", func(t *testing.T) {
		contracttest.RunAdmit(t, func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, contracttest.Clock) {
			b, clk, m := miniGate(t, p)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			q, err := redis.NewQuota(c, "chat", limits)
			require.NoError(t, err)
			return b, q, clk
		})
	})
	t.Run("Redis", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		contracttest.RunAdmit(t, realAdmits(realClient(t, srv.Addr)))
	})
}

func TestConcludeContract(t *testing.T) {
	t.Run("Miniredis", func(t *testing.T) {
		contracttest.RunConclude(t, func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, contracttest.Clock) {
			b, clk, m := miniGate(t, p)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			q, err := redis.NewQuota(c, "chat", limits)
			require.NoError(t, err)
			return b, q, clk
		})
	})
	t.Run("Redis", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		contracttest.RunConclude(t, realAdmits(realClient(t, srv.Addr)))
	})
}
