package redis_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

// BenchmarkGovernedGatesDuringAnOutage compares the gates of one governed
// call (TryEnter, Acquire, Finish, Record) on the memory backend with the
// same call on the Redis failover gates while their prober reports an
// outage (a Redis that refuses connections): the fallbacks serve it without
// touching the network. It reports the mean and the p99 of one call.
func BenchmarkGovernedGatesDuringAnOutage(b *testing.B) {
	limits := map[string]gate.Limits{"s": {RPM: 1 << 30, TPM: 1 << 30, MaxInFlight: 1 << 20}}
	ctx := context.Background()
	call := func(b *testing.B, br gate.ProviderGate, q gate.QuotaGate) {
		lat := make([]time.Duration, 0, 1<<16)
		for b.Loop() {
			start := time.Now()
			d, err := br.TryEnter(ctx, "s")
			if err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
			p, qd, err := q.Acquire(ctx, "s", 10)
			if err != nil || !qd.Allowed {
				b.Fatal(qd, err)
			}
			if err := gate.Finish(ctx, q, p, 10); err != nil {
				b.Fatal(err)
			}
			if _, err := br.Record(ctx, "s", d, gate.Success); err != nil {
				b.Fatal(err)
			}
			if len(lat) < cap(lat) {
				lat = append(lat, time.Since(start))
			}
		}
		slices.Sort(lat)
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns/op")
		}
	}
	b.Run("Memory", func(b *testing.B) {
		mb, _ := memory.NewBreaker(gate.Policy{})
		mq, _ := memory.NewQuota(limits)
		call(b, mb, mq)
	})
	b.Run("RedisOutage", func(b *testing.B) {
		c := fastFailClient(b, "127.0.0.1:1")
		pr, err := redis.NewProber(c, redis.WithProbeInterval(time.Hour), redis.WithProbeTimeout(time.Second),
			redis.WithProbeBackoff(time.Hour), redis.WithHeartbeatTTL(2*time.Hour), redis.WithProberLogger(slog.New(&logSink{})))
		if err != nil {
			b.Fatal(err)
		}
		defer pr.Close()
		for !pr.Down() {
			time.Sleep(time.Millisecond)
		}
		rb, _ := redis.NewBreaker(c, "bench", gate.Policy{})
		mb, _ := memory.NewBreaker(gate.Policy{})
		br, _ := redis.NewFailover(rb, mb, redis.FailOpen, slog.New(&logSink{}), redis.WithProber(pr))
		rq, _ := redis.NewQuota(c, "bench", limits)
		fq, _ := redis.NewFleetQuota(limits, pr)
		q, _ := redis.NewQuotaFailover(rq, fq, redis.FailOpen, slog.New(&logSink{}), redis.WithProber(pr))
		call(b, br, q)
	})
}
