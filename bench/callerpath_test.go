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
	"github.com/pgw-go/pgw/gate"
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
	call, flush := retryRunCall(b, client, 7, callLimits)
	ctx := b.Context()
	if err := call(ctx); err != nil { // warm: scripts loaded, connections pooled
		b.Fatal(err)
	}
	// PING in the same run, on the same server and in the same state of the
	// machine: blocks of pingBlock PINGs alternate with blocks of governed
	// calls, each block timed on its own, so that neither figure is taken
	// while the other's conditions hold (a loopback round trip here moves
	// from ~20 µs in a burst to ~60 µs in a long steady loop). The PINGs are
	// outside the benchmark's timer; ns/op is the calls' alone.
	const pingBlock = 64
	ping := func() time.Duration {
		b.StopTimer()
		defer b.StartTimer()
		start := time.Now()
		for range pingBlock {
			if err := client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	trips.caller.Store(0)
	trips.writer.Store(0)
	var pingTime, callTime time.Duration
	var pings, governed int
	b.ResetTimer()
	blockStart := time.Now()
	for b.Loop() {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
		governed++
		if governed%pingBlock == 0 {
			callTime += time.Since(blockStart)
			pingTime += ping()
			pings += pingBlock
			blockStart = time.Now()
		}
	}
	callTime += time.Since(blockStart)
	if pings == 0 { // too few calls for a block: one block after them
		pingTime, pings = ping(), pingBlock
	}
	b.StopTimer()
	flush()
	n := float64(b.N)
	// -1: CONFIG RESETSTAT is not a call's; the PINGs are not either.
	b.ReportMetric(float64(trips.caller.Load()-1-int64(pings))/n, "callerroundtrips/call")
	b.ReportMetric(float64(trips.caller.Load()-1-int64(pings)+trips.writer.Load())/n, "roundtrips/call")
	perPing := float64(pingTime.Nanoseconds()) / float64(pings)
	b.ReportMetric(float64(callTime.Nanoseconds())/float64(governed)/perPing, "pings/call")
	b.ReportMetric(perPing/1000, "pingµs")
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
	// More room than callLimits: at saturation a minute's RPM of 1<<20
	// would be spent, and 32 goroutines share the in-flight slots.
	call, flush := retryRunCall(b, client, 7, gate.Limits{RPM: 1 << 24, TPM: 1 << 26, MaxInFlight: 1024})
	ctx := b.Context()
	if err := call(ctx); err != nil {
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
			if err := call(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	flush()
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(trips.caller.Load()-1)/n, "callerroundtrips/call")
	b.ReportMetric(float64(trips.caller.Load()-1+trips.writer.Load())/n, "roundtrips/call")
	usec, calls := commandStats(b, client)
	b.ReportMetric(usec/n, "serverµs/call")
	b.ReportMetric(calls/n, "commands/call")
}
