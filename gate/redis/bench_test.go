package redis_test

import (
	"testing"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// BenchmarkTryEnterRecord is one governed call on a local redis-server: two
// round trips (TryEnter, Record Success) on the Closed path.
func BenchmarkTryEnterRecord(b *testing.B) {
	srv := testutil.StartRedis(b)
	c := goredisClient(b, srv.Addr)
	g, err := redis.NewBreaker(c, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if err := g.Preload(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("Serial", func(b *testing.B) {
		for b.Loop() {
			d, err := g.TryEnter(ctx, "s")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := g.Record(ctx, "s", d, gate.Success); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d, err := g.TryEnter(ctx, "s")
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := g.Record(ctx, "s", d, gate.Success); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("RetryAfter4Sources", func(b *testing.B) {
		srcs := []string{"a", "b", "c", "d"}
		for b.Loop() {
			if _, err := g.RetryAfter(ctx, srcs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
