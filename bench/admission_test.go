package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// BenchmarkAdmission is one full in-memory admission round (target
// under 1 µs): Pick over 8 sources in two weighted priority tiers — memo,
// breaker TryEnter, quota Acquire (RPM, TPM and in-flight limits on every
// source) — then Done: breaker Record, quota Settle and Release. The peers
// have no admission layer, so there is no ratio; it runs here so its figure
// comes from the same run as the breaker comparison.
func BenchmarkAdmission(b *testing.B) {
	sources := make([]admission.Source, 8)
	limits := map[string]gate.Limits{}
	for i := range sources {
		sources[i] = admission.Source{Name: fmt.Sprintf("src-%d", i), Weight: 1 + i%3, Priority: i / 4}
		limits[sources[i].Name] = gate.Limits{RPM: 1_000_000_000, TPM: 1_000_000_000, MaxInFlight: 64}
	}
	br, err := memory.NewBreaker(gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	q, err := memory.NewQuota(limits)
	if err != nil {
		b.Fatal(err)
	}
	adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: sources, Breaker: br, Quota: q, Logger: discardLogger})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	round := func() error {
		t, _, err := adm.Pick(ctx, nil, 100)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("no source admitted")
		}
		return t.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: 90})
	}
	if err := round(); err != nil {
		b.Fatal(err)
	}

	b.Run("serial/pgw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = round()
		}
	})
	b.Run("parallel/pgw", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = round()
			}
		})
	})
}
