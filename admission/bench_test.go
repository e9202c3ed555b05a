package admission_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

func eightSources() []admission.Source {
	src := make([]admission.Source, 8)
	for i := range src {
		src[i] = admission.Source{Name: fmt.Sprintf("src-%d", i), Weight: 1 + i%3, Priority: i / 4}
	}
	return src
}

// BenchmarkPickDone is one admission round and its give-back on the
// in-memory breaker, 8 sources in two weighted tiers (target < 1 µs).
func BenchmarkPickDone(b *testing.B) { benchPickDone(b, false) }

// BenchmarkPickDoneWithQuota adds the in-memory quota gate (RPM, TPM and
// MaxInFlight on every source) to BenchmarkPickDone: the full in-memory
// admission.
func BenchmarkPickDoneWithQuota(b *testing.B) { benchPickDone(b, true) }

func benchPickDone(b *testing.B, withQuota bool) {
	br, err := memory.NewBreaker(gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := admission.Config{Scope: "CHAT", Sources: eightSources(), Breaker: br}
	if withQuota {
		limits := map[string]gate.Limits{}
		for _, s := range cfg.Sources {
			limits[s.Name] = gate.Limits{RPM: 1_000_000_000, TPM: 1_000_000_000, MaxInFlight: 64}
		}
		q, err := memory.NewQuota(limits)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Quota = q
	}
	adm, err := admission.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		t, _, err := adm.Pick(ctx, nil, 100)
		if err != nil || t == nil {
			b.Fatal("no ticket", err)
		}
		_ = t.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: 90})
	}
}

// BenchmarkPickDoneParallel is BenchmarkPickDone from every P at once.
func BenchmarkPickDoneParallel(b *testing.B) {
	br, err := memory.NewBreaker(gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: eightSources(), Breaker: br})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, _, err := adm.Pick(ctx, nil, 100)
			if err != nil || t == nil {
				b.Error("no ticket", err)
				return
			}
			_ = t.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: 90})
		}
	})
}
