package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// BenchmarkQuotaAcquireSettleRelease is one governed call's quota traffic
// against a real redis-server on loopback: Acquire, Settle below the
// estimate, Release — three scripts, three round trips (reported as
// round-trips/op, counted by a go-redis hook). The limits are high enough
// never to reject, so every operation runs its full script.
func BenchmarkQuotaAcquireSettleRelease(b *testing.B) {
	srv := testutil.StartRedis(b)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = c.Close() })
	q, err := redis.NewQuota(c, uniqueScope(), map[string]gate.Limits{
		"s": {RPM: 18_000_000_000, TPM: 18_000_000_000, MaxInFlight: 1 << 20},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if err := q.Preload(ctx); err != nil {
		b.Fatal(err)
	}
	rt := &roundTrips{}
	c.AddHook(rt)
	b.ReportAllocs()
	for b.Loop() {
		p, d, err := q.Acquire(ctx, "s", 10)
		if err != nil || !d.Allowed {
			b.Fatalf("Acquire: %+v %v", d, err)
		}
		if err := q.Settle(ctx, p, 7); err != nil {
			b.Fatal(err)
		}
		if err := q.Release(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	trips, _ := rt.take()
	b.ReportMetric(float64(trips)/float64(b.N), "round-trips/op")
}
