package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The Redis gate passes the breaker contract unchanged on miniredis (its own
// clock, exact), on a real redis-server and on a 3-master cluster (real
// time, short durations).

func TestContractMiniredis(t *testing.T) {
	contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, clk, _ := miniGate(t, p)
		return b, clk
	})
}

func TestContractRedisServer(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, err := redis.NewBreaker(c, "chat", p)
		require.NoError(t, err)
		return b, contracttest.RealClock{}
	})
}

func TestContractRedisCluster(t *testing.T) {
	cl := testutil.StartRedisCluster(t)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = c.Close() })
	contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		b, err := redis.NewBreaker(c, "chat", p)
		require.NoError(t, err)
		return b, contracttest.RealClock{}
	})
}
