package redis_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

// A breaker gate shared by every process using the same Redis. The same code
// works with a cluster (goredis.NewClusterClient) or sentinel
// (goredis.NewFailoverClient).
func ExampleNewBreaker() {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()

	g, err := redis.NewBreaker(c, "CHAT", gate.Policy{ConsecutiveFailures: 5})
	if err != nil {
		panic(err) // an invalid policy
	}
	d, err := g.TryEnter(ctx, "openai")
	if err != nil {
		panic(err) // Redis unreachable: see NewFailover
	}
	if !d.Allowed {
		fmt.Println("skip openai for", d.RetryAfter)
		return
	}
	// … call the upstream, then report exactly once:
	_, _ = g.Record(ctx, "openai", d, gate.Success)
}

// PGW_REDIS_DOWN=fail_open: a local memory gate with the same policy serves
// while Redis is unreachable.
func ExampleNewFailover() {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()

	p := gate.Policy{Cooldown: 30 * time.Second}
	shared, err := redis.NewBreaker(c, "CHAT", p)
	if err != nil {
		panic(err)
	}
	local, err := memory.NewBreaker(p)
	if err != nil {
		panic(err)
	}
	g, err := redis.NewFailover(shared, local, redis.FailOpen, slog.Default())
	if err != nil {
		panic(err)
	}
	_ = gate.ProviderGate(g) // use g wherever a gate is expected
	// Output:
}
