package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// The budget: "Redis: exactly one round trip per gate operation; a waiting call
// ≤ 2 gate queries per cooldown". These benchmarks count, rather than time:
// their figures are the ReportMetric columns.

// countingGate counts the breaker operations that go through it.
type countingGate struct {
	gate.ProviderGate
	queries, records, snapshots atomic.Int64
}

func (g *countingGate) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	g.queries.Add(1)
	return g.ProviderGate.TryEnter(ctx, s)
}

func (g *countingGate) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	g.records.Add(1)
	return g.ProviderGate.Record(ctx, s, d, o)
}

func (g *countingGate) RetryAfter(ctx context.Context, s []string) (time.Duration, error) {
	g.queries.Add(1)
	return g.ProviderGate.RetryAfter(ctx, s)
}

func (g *countingGate) Snapshot(ctx context.Context, s string) (gate.Snapshot, error) {
	g.queries.Add(1)
	g.snapshots.Add(1)
	return g.ProviderGate.Snapshot(ctx, s)
}

func scope(mode config.Mode) config.ScopeSettings {
	return config.ScopeSettings{
		Name:         "BENCH",
		Sources:      []config.Source{{Name: "s", Timeout: time.Second}},
		CircuitOpen:  mode,
		PollInterval: 5 * time.Millisecond,
		StallWindow:  10 * time.Second,
	}
}

func succeed(context.Context, config.Source) (string, transport.Usage, error) {
	return "ok", transport.Usage{TotalTokens: 10}, nil
}

// BenchmarkRedisRoundTripsPerGovernedCall counts the round trips of governed
// calls on the Redis backends the way a gateway runs them — admission in
// one script (gate.Admitter), the outcome through the background writer —
// split into the caller's path (callerroundtrips/call, the target is 1) and
// all of them (roundtrips/call, the writer's included), with the Redis
// commands per call. "estimate": retry.Run, the call used the 10 tokens
// estimated, so there is nothing to settle; "settled": it used 7, so the
// conclusion settles the permit too (still one script); "pgw.Call": a
// GatewayClient's Call, whose source reports no rate-limit headers, so the
// advertised budget is asked on every call — in the admission's script.
// Calls run one after another, so the writer has one outcome per round
// trip; under load it batches (RedisGovernedSaturation).
func BenchmarkRedisRoundTripsPerGovernedCall(b *testing.B) {
	for _, c := range []struct {
		name   string
		tokens int
	}{{"estimate", 10}, {"settled", 7}, {"pgw.Call", 7}} {
		b.Run(c.name, func(b *testing.B) {
			client := startRedis(b)
			trips := &pathCounter{}
			client.AddHook(trips)
			var call func(ctx context.Context) error
			var flush func()
			if c.name == "pgw.Call" {
				call, flush = redisCall(b, client)
			} else {
				call, flush = retryRunCall(b, client, c.tokens, callLimits)
			}
			ctx := b.Context()
			if err := call(ctx); err != nil { // warm: scripts loaded, connections pooled
				b.Fatal(err)
			}
			if err := client.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			trips.caller.Store(0)
			trips.writer.Store(0)
			b.ResetTimer()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			flush() // the writer's last outcomes
			n := float64(b.N)
			_, commands := commandStats(b, client)
			// The scripts' commands: the prober's heartbeat (pgw.Call) is
			// no call's, so it is counted by key below.
			b.ReportMetric(float64(trips.callerSource.Load())/n, "callerroundtrips/call")
			b.ReportMetric(float64(trips.callerSource.Load()+trips.writerSource.Load())/n, "roundtrips/call")
			b.ReportMetric(commands/n, "evals/call")
		})
	}
}

// callLimits are the quota limits retryRunCall's source gets by default.
var callLimits = gate.Limits{RPM: 1 << 20, TPM: 1 << 24, MaxInFlight: 64}

// retryRunCall is one governed retry.Run on client's Redis (breaker and
// quota with the limits given, the outcome writer) whose attempt reports
// tokens, and a flush of the writer.
func retryRunCall(b *testing.B, client *goredis.Client, tokens int, limits gate.Limits) (func(context.Context) error, func()) {
	rb, err := redis.NewBreaker(client, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	rq, err := redis.NewQuota(client, "bench", map[string]gate.Limits{"s": limits})
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
		return "ok", transport.Usage{TotalTokens: tokens}, nil
	}
	return func(ctx context.Context) error {
			_, err := retry.Run(ctx, loop, 10, attempt)
			return err
		}, func() {
			if err := w.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
}

// redisCall is one pgw.Call on a GatewayClient whose scope BENCH has one
// source with RPM and MaxInFlight on client's Redis, and the gateway's
// Close, which flushes its writer.
func redisCall(b *testing.B, client *goredis.Client) (func(context.Context) error, func()) {
	gw, err := pgw.New(context.Background(), pgw.Settings{
		BreakerBackend: config.BackendRedis,
		Scopes: []pgw.ScopeSettings{{
			Name:    "BENCH",
			Sources: []pgw.Source{{Name: "s", BaseURL: "http://127.0.0.1:1", Timeout: 10 * time.Second, RPM: 10_000_000, MaxInFlight: 1024}},
		}},
	}, pgw.WithRedisClient(client), pgw.WithLogger(discardLogger))
	if err != nil {
		b.Fatal(err)
	}
	attempt := func(context.Context, pgw.Source) (struct{}, pgw.Usage, error) {
		return struct{}{}, pgw.Usage{TotalTokens: 7}, nil
	}
	return func(ctx context.Context) error {
			_, err := pgw.Call(ctx, gw, "BENCH", attempt)
			return err
		}, func() {
			if err := gw.Close(); err != nil {
				b.Fatal(err)
			}
		}
}

// BenchmarkWaitingCallGateQueries opens a single source (cooldown 30 ms) and
// runs one CIRCUIT_OPEN=wait call that waits it out; it reports the breaker
// queries (TryEnter, RetryAfter, Snapshot) that call made per cooldown. The
// target is at most 2: the rejection and the probe — not one per poll, and
// nothing for reporting the state changes the call sees (open, half_open,
// closed): admission's watch tells them from the gate answers themselves
// (gate/doc.go "Generations").
func BenchmarkWaitingCallGateQueries(b *testing.B) {
	for _, backend := range []string{"memory", "redis"} {
		b.Run(backend, func(b *testing.B) {
			p := gate.Policy{ConsecutiveFailures: 1, Cooldown: 30 * time.Millisecond}
			var g gate.ProviderGate
			if backend == "memory" {
				mb, err := memory.NewBreaker(p)
				if err != nil {
					b.Fatal(err)
				}
				g = mb
			} else {
				rb, err := redis.NewBreaker(startRedis(b), "bench", p)
				if err != nil {
					b.Fatal(err)
				}
				g = rb
			}
			cg := &countingGate{ProviderGate: g}
			loop, err := retry.New(retry.Config{Scope: scope(config.ModeWait), Breaker: cg, Logger: discardLogger})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			var queries, snapshots int64
			for b.Loop() {
				d, err := g.TryEnter(ctx, "s")
				if err != nil || !d.Allowed {
					b.Fatalf("setup: %v %+v", err, d)
				}
				if _, err := g.Record(ctx, "s", d, gate.Fatal); err != nil {
					b.Fatal(err)
				}
				before, beforeSnap := cg.queries.Load(), cg.snapshots.Load()
				if _, err := retry.Run(ctx, loop, 0, succeed); err != nil {
					b.Fatal(err)
				}
				queries += cg.queries.Load() - before
				snapshots += cg.snapshots.Load() - beforeSnap
			}
			// snapshots: the reads admission's state-change watch makes,
			// counted apart; it reads the record only when generations
			// cannot order two answers (a race, an expired Redis record, a
			// Failover switching records), so 0 here. Before answers carried
			// the generation it read one per transition seen: 5 queries, 3
			// of them snapshots.
			b.ReportMetric(float64(queries)/float64(b.N), "gatequeries/cooldown")
			b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/cooldown")
		})
	}
}
