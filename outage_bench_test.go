package pgw_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// BenchmarkCallDuringARedisOutage is a governed pgw.Call (a custom scope,
// one source with RPM, TPM and MAX_IN_FLIGHT) on the memory backend, and on
// the Redis backend under fail_open while Redis refuses connections: the
// gateway's prober reports the outage and every call is served locally. It
// reports the mean and the p99 of one call.
func BenchmarkCallDuringARedisOutage(b *testing.B) {
	env := map[string]string{
		"PGW_SCOPES":               "RERANK",
		"RERANK__SOURCES":          "s",
		"RERANK__S__RPM":           "100000000",
		"RERANK__S__TPM":           "1000000000",
		"RERANK__S__MAX_IN_FLIGHT": "1000",
		"RERANK__S__MODEL":         "m",
		"PGW_REDIS_DOWN":           "fail_open",
		"PGW_BREAKER_BACKEND":      "memory",
		"PGW_QUOTA_BACKEND":        "memory",
	}
	fn := func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{TotalTokens: 1}, nil }
	run := func(b *testing.B, env map[string]string) {
		s, err := config.FromMap(env)
		if err != nil {
			b.Fatal(err)
		}
		gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			b.Fatal(err)
		}
		defer gw.Close()
		time.Sleep(100 * time.Millisecond) // the prober's first two probes fail at once
		ctx := context.Background()
		lat := make([]time.Duration, 0, 1<<16)
		for b.Loop() {
			start := time.Now()
			if _, err := pgw.Call(ctx, gw, "RERANK", fn); err != nil {
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
	b.Run("Memory", func(b *testing.B) { run(b, env) })
	b.Run("RedisOutage", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		e := maps(env)
		e["PGW_BREAKER_BACKEND"], e["PGW_QUOTA_BACKEND"] = "redis", "redis"
		e["PGW_REDIS_URL"] = "redis://" + addr + "/0"
		run(b, e)
	})
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
