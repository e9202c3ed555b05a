package memory_test

import (
	"testing"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// benchLimits never reject within a benchmark run on the wall clock: 18e9 a
// minute is 300 million a second, far above what b.N calls take, so the
// admitted path — the one that matters — is what is measured, with every
// limit (RPM, TPM, MaxInFlight) in force.
var benchLimits = map[string]gate.Limits{
	"openai-eu": {RPM: 18_000_000_000, TPM: 18_000_000_000, MaxInFlight: 1 << 20},
	"other":     {RPM: 600, TPM: 100_000, MaxInFlight: 4},
}

// BenchmarkQuotaAcquireSettleRelease is one governed call's quota traffic on
// the system clock: Acquire with an estimate, Settle with a smaller actual
// count (the common case: estimates are upper bounds), Release. Target:
// ≤ 150 ns/op, 0 allocs/op.
func BenchmarkQuotaAcquireSettleRelease(b *testing.B) { benchAcquireSettleRelease(b, 7) }

// BenchmarkQuotaAcquireSettleReleaseDebit settles above the estimate, the
// path that reads the clock a second time.
func BenchmarkQuotaAcquireSettleReleaseDebit(b *testing.B) { benchAcquireSettleRelease(b, 13) }

// benchAcquireSettleRelease acquires with an estimate of 10 tokens and
// settles at actual.
func benchAcquireSettleRelease(b *testing.B, actual int64) {
	q, err := memory.NewQuota(benchLimits)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		p, d, err := q.Acquire(ctx, "openai-eu", 10)
		if err != nil || !d.Allowed {
			b.Fatalf("Acquire: %+v %v", d, err)
		}
		_ = q.Settle(ctx, p, actual)
		_ = q.Release(ctx, p)
	}
}

// BenchmarkQuotaAcquireSettleReleaseParallel runs the same from every P on
// one source: the per-source lock is the contended resource.
func BenchmarkQuotaAcquireSettleReleaseParallel(b *testing.B) {
	q, err := memory.NewQuota(benchLimits)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, d, err := q.Acquire(ctx, "openai-eu", 10)
			if err != nil || !d.Allowed {
				b.Errorf("Acquire: %+v %v", d, err)
				return
			}
			_ = q.Settle(ctx, p, 7)
			_ = q.Release(ctx, p)
		}
	})
}

// BenchmarkQuotaAcquireRejected is a rejection by RPM: the path a waiting
// call polls.
func BenchmarkQuotaAcquireRejected(b *testing.B) {
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {RPM: 1}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	_, _, _ = q.Acquire(ctx, "s", 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, d, _ := q.Acquire(ctx, "s", 0); d.Allowed {
			b.Fatal("admitted")
		}
	}
}
