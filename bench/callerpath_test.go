package bench

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// pathCounter counts the round trips a governed call sends, split into those
// on the caller's path and those the outcome writer sends in the background
// (admission.IsWrite): caller and writer count every one, callerSource and
// writerSource only those that touch a source's keys (a gate script: the
// breaker's, the quota's or the advertised budget's; not the prober's
// heartbeat or a benchmark's own command).
type pathCounter struct{ caller, writer, callerSource, writerSource atomic.Int64 }

func (h *pathCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *pathCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !handshake(cmd) {
			h.book(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (h *pathCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.book(ctx, cmds...)
		return next(ctx, cmds)
	}
}

// book counts one round trip of cmds.
func (h *pathCounter) book(ctx context.Context, cmds ...goredis.Cmder) {
	source := false
	for _, c := range cmds {
		// A gate script's first key carries a source's hash tag; the
		// prober's heartbeat's, the fleet's.
		if k, ok := c.Args()[min(3, len(c.Args())-1)].(string); ok && strings.Contains(k, "}:") && !strings.Contains(k, "{pgw-fleet}") {
			source = true
		}
	}
	if admission.IsWrite(ctx) {
		h.writer.Add(1)
		if source {
			h.writerSource.Add(1)
		}
		return
	}
	h.caller.Add(1)
	if source {
		h.callerSource.Add(1)
	}
}

// BenchmarkRedisPing is the physical limit of the benchmarks below: one
// PING round trip to the same kind of loopback redis-server.
func BenchmarkRedisPing(b *testing.B) {
	client := startRedis(b)
	ctx := b.Context()
	for b.Loop() {
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisGovernedCallerPath is a governed call (retry.Run, one
// source, Redis breaker and quota with RPM, TPM and MaxInFlight) the way a
// gateway runs it: admission asks the breaker and the quota in one script
// (gate.Admitter) and the outcome goes to the background writer. ns/op is
// the caller's time; it reports the round trips on the caller's path and in
// all, the Redis server's µs per call from INFO commandstats, and the
// overhead as a multiple of one PING measured in the same run.
func BenchmarkRedisGovernedCallerPath(b *testing.B) {
	client := startRedis(b)
	trips := &pathCounter{}
	client.AddHook(trips)
	rb, err := redis.NewBreaker(client, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	rq, err := redis.NewQuota(client, "bench", map[string]gate.Limits{"s": {RPM: 1 << 20, TPM: 1 << 24, MaxInFlight: 64}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := admission.NewWriter(admission.WriterConfig{})
	if err != nil {
		b.Fatal(err)
	}
	loop, err := retry.New(retry.Config{Scope: scope(config.ModeFailFast), Breaker: rb, Quota: rq, Logger: discardLogger, Writer: w})
	if err != nil {
		b.Fatal(err)
	}
	attempt := func(context.Context, config.Source) (string, transport.Usage, error) {
		return "ok", transport.Usage{TotalTokens: 7}, nil
	}
	ctx := b.Context()
	if _, err := retry.Run(ctx, loop, 10, attempt); err != nil { // warm: scripts loaded, connections pooled
		b.Fatal(err)
	}
	// PING in the same run, on the same server (testing.Benchmark cannot
	// nest in a running benchmark).
	var ping float64
	{
		const pings = 2000
		start := time.Now()
		for range pings {
			if err := client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
		ping = float64(time.Since(start).Nanoseconds()) / pings
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	trips.caller.Store(0)
	trips.writer.Store(0)
	b.ResetTimer()
	for b.Loop() {
		if _, err := retry.Run(ctx, loop, 10, attempt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(trips.caller.Load()-1)/n, "callerroundtrips/call") // -1: CONFIG RESETSTAT is not a call's
	b.ReportMetric(float64(trips.caller.Load()-1+trips.writer.Load())/n, "roundtrips/call")
	elapsed := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(elapsed/ping, "pings/call")
	b.ReportMetric(ping/1000, "pingµs")
	usec, calls := commandStats(b, client)
	b.ReportMetric(usec/n, "serverµs/call")
	b.ReportMetric(calls/n, "commands/call")
}

// commandStats sums usec and calls of the EVALSHA/EVAL entries of INFO
// commandstats.
func commandStats(b *testing.B, c *goredis.Client) (usec, calls float64) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, f := range strings.Split(line[strings.Index(line, ":")+1:], ",") {
			k, v, _ := strings.Cut(f, "=")
			x, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "usec":
				usec += x
			case "calls":
				calls += x
			}
		}
	}
	return usec, calls
}

// BenchmarkRedisGovernedSaturation drives one source on one redis-server
// with 32 goroutines of governed calls (as BenchmarkRedisGovernedCallerPath,
// the attempt answering at once), so Redis and the 2 CPUs are the limit:
// calls/s is the throughput of one source at saturation, serverµs/call the
// Redis CPU each governed call costs (INFO commandstats), commands/call and
// roundtrips/call what it sends — the writer pipelines the outcomes that
// queue up meanwhile, so a round trip may carry several.
func BenchmarkRedisGovernedSaturation(b *testing.B) {
	client := startRedis(b)
	trips := &pathCounter{}
	client.AddHook(trips)
	rb, err := redis.NewBreaker(client, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	rq, err := redis.NewQuota(client, "bench", map[string]gate.Limits{"s": {RPM: 1 << 24, TPM: 1 << 26, MaxInFlight: 1024}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := admission.NewWriter(admission.WriterConfig{})
	if err != nil {
		b.Fatal(err)
	}
	loop, err := retry.New(retry.Config{Scope: scope(config.ModeFailFast), Breaker: rb, Quota: rq, Logger: discardLogger, Writer: w})
	if err != nil {
		b.Fatal(err)
	}
	attempt := func(context.Context, config.Source) (string, transport.Usage, error) {
		return "ok", transport.Usage{TotalTokens: 7}, nil
	}
	ctx := b.Context()
	if _, err := retry.Run(ctx, loop, 10, attempt); err != nil {
		b.Fatal(err)
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	trips.caller.Store(0)
	trips.writer.Store(0)
	b.SetParallelism(16) // × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := retry.Run(ctx, loop, 10, attempt); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(trips.caller.Load()-1)/n, "callerroundtrips/call")
	b.ReportMetric(float64(trips.caller.Load()-1+trips.writer.Load())/n, "roundtrips/call")
	usec, calls := commandStats(b, client)
	b.ReportMetric(usec/n, "serverµs/call")
	b.ReportMetric(calls/n, "commands/call")
}
