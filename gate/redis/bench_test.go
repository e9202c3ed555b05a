package redis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

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

// BenchmarkAdmitConclude is the Redis half of a governed call, script by
// script: b.N admissions (breaker and quota in one script), then their
// b.N conclusions (Record and Finish in one script), one at a time. It
// reports each script's server time (INFO commandstats, usec of EVALSHA
// over its calls); ns/op is the client's time for both.
func BenchmarkAdmitConclude(b *testing.B) {
	srv := testutil.StartRedis(b)
	c := goredisClient(b, srv.Addr)
	rb, err := redis.NewBreaker(c, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	rq, err := redis.NewQuota(c, "bench", map[string]gate.Limits{"s": {RPM: 1 << 24, TPM: 1 << 26, MaxInFlight: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if err := rq.Preload(ctx); err != nil {
		b.Fatal(err)
	}
	cs := make([]gate.Conclusion, 0, 1024)
	var admitUs, concludeUs float64
	for b.Loop() {
		d, p, qd, _, err := rq.Admit(ctx, rb, "s", 10)
		if err != nil || !d.Allowed || !qd.Allowed {
			b.Fatalf("admit: %v %+v %+v", err, d, qd)
		}
		cs = append(cs, gate.Conclusion{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: 7})
		if len(cs) == cap(cs) {
			admitUs += evalshaUsec(b, c)
			for i := range cs {
				rq.Conclude(ctx, rb, cs[i:i+1])
				if cs[i].Err != nil {
					b.Fatal(cs[i].Err)
				}
			}
			concludeUs += evalshaUsec(b, c)
			cs = cs[:0]
		}
	}
	admitUs += evalshaUsec(b, c)
	for i := range cs {
		rq.Conclude(ctx, rb, cs[i:i+1])
	}
	concludeUs += evalshaUsec(b, c)
	b.ReportMetric(admitUs/float64(b.N), "admitµs")
	b.ReportMetric(concludeUs/float64(b.N), "concludeµs")
	b.ReportMetric((admitUs+concludeUs)/float64(b.N), "serverµs/call")
}

// evalshaUsec returns the usec INFO commandstats gives EVALSHA and EVAL
// since the last call, and resets the statistics.
func evalshaUsec(b *testing.B, c goredis.UniversalClient) float64 {
	b.Helper()
	ctx := context.Background()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, f := range strings.Split(line[strings.Index(line, ":")+1:], ",") {
			if k, v, _ := strings.Cut(f, "="); k == "usec" {
				x, _ := strconv.ParseFloat(v, 64)
				usec += x
			}
		}
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return usec
}
