package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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

// countingQuota counts the quota operations that go through it.
type countingQuota struct {
	gate.QuotaGate
	ops atomic.Int64
}

func (q *countingQuota) Acquire(ctx context.Context, s string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	q.ops.Add(1)
	return q.QuotaGate.Acquire(ctx, s, est)
}

func (q *countingQuota) Settle(ctx context.Context, p gate.Permit, n int64) error {
	q.ops.Add(1)
	return q.QuotaGate.Settle(ctx, p, n)
}

func (q *countingQuota) Release(ctx context.Context, p gate.Permit) error {
	q.ops.Add(1)
	return q.QuotaGate.Release(ctx, p)
}

// Finish counts two gate operations, a settlement and a release, made in one
// call (one script on Redis).
func (q *countingQuota) Finish(ctx context.Context, p gate.Permit, n int64) error {
	q.ops.Add(2)
	return q.QuotaGate.(gate.Finisher).Finish(ctx, p, n)
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

// BenchmarkRedisRoundTripsPerGovernedCall runs governed calls through the
// Redis breaker and quota gates and reports the round trips per call and per
// gate operation (the target is at most 1). "estimate": the call used the
// 10 tokens estimated, so there is nothing to settle (TryEnter, Acquire,
// Record, Release); "settled": it used 7, so the permit is settled and
// released — two operations in one script (Quota.Finish).
func BenchmarkRedisRoundTripsPerGovernedCall(b *testing.B) {
	for _, c := range []struct {
		name   string
		tokens int
	}{{"estimate", 10}, {"settled", 7}} {
		b.Run(c.name, func(b *testing.B) {
			attempt := func(context.Context, config.Source) (string, transport.Usage, error) {
				return "ok", transport.Usage{TotalTokens: c.tokens}, nil
			}
			client := startRedis(b)
			trips := &cmdCounter{trips: true}
			client.AddHook(trips)
			rb, err := redis.NewBreaker(client, "bench", gate.Policy{})
			if err != nil {
				b.Fatal(err)
			}
			rq, err := redis.NewQuota(client, "bench", map[string]gate.Limits{"s": {RPM: 1 << 20, TPM: 1 << 24, MaxInFlight: 64}})
			if err != nil {
				b.Fatal(err)
			}
			cg, cq := &countingGate{ProviderGate: rb}, &countingQuota{QuotaGate: rq}
			loop, err := retry.New(retry.Config{Scope: scope(config.ModeFailFast), Breaker: cg, Quota: cq, Logger: discardLogger})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if _, err := retry.Run(ctx, loop, 10, attempt); err != nil { // warm: scripts loaded, connections pooled
				b.Fatal(err)
			}
			trips.n.Store(0)
			cg.queries.Store(0)
			cg.records.Store(0)
			cq.ops.Store(0)
			b.ResetTimer()
			for b.Loop() {
				if _, err := retry.Run(ctx, loop, 10, attempt); err != nil {
					b.Fatal(err)
				}
			}
			ops := cg.queries.Load() + cg.records.Load() + cq.ops.Load()
			b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/call")
			b.ReportMetric(float64(ops)/float64(b.N), "gateops/call")
			b.ReportMetric(float64(trips.n.Load())/float64(ops), "roundtrips/gateop")
		})
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
