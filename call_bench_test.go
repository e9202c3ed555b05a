package pgw_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/pgw-go/pgw"
)

// benchGateway is the memory-backend gateway of bench/'s GovernedCall: one
// source with an RPM quota and MAX_IN_FLIGHT, no observer, a quiet logger.
func benchGateway(tb testing.TB) *pgw.GatewayClient {
	tb.Helper()
	s := pgw.Settings{Scopes: []pgw.ScopeSettings{{
		Name: "BENCH",
		Sources: []pgw.Source{{
			Name: "up", BaseURL: "http://127.0.0.1:1", Timeout: 10 * time.Second,
			RPM: 10_000_000, MaxInFlight: 1024,
		}},
	}}}
	gw, err := pgw.New(context.Background(), s, pgw.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = gw.Close() })
	return gw
}

func noopAttempt(context.Context, pgw.Source) (struct{}, pgw.Usage, error) {
	return struct{}{}, pgw.Usage{}, nil
}

// BenchmarkCallOverhead is pgw.Call around an attempt that does nothing:
// the library's own cost per call, free of any upstream's noise (bench/'s
// GovernedCall measures the same around a loopback HTTP call).
func BenchmarkCallOverhead(b *testing.B) {
	gw := benchGateway(b)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pgw.Call(ctx, gw, "BENCH", noopAttempt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := pgw.Call(ctx, gw, "BENCH", noopAttempt); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCallOverheadAfterEviction is BenchmarkCallOverhead with an
// attempt that writes one byte in every cache line of a buffer, standing in
// for what an upstream call does to the CPU's caches (a loopback HTTP round
// trip runs the kernel's network stack, net/http and the server). The
// attempt times itself; overhead-ns/call is the rest, pgw's own cost per
// call once the attempt has evicted that much of what the call touched. At
// evict=0 it is BenchmarkCallOverhead's figure, plus the two clock readings.
func BenchmarkCallOverheadAfterEviction(b *testing.B) {
	for _, kib := range []int{0, 256, 1024, 4096} {
		b.Run(fmt.Sprintf("evict=%dKiB", kib), func(b *testing.B) {
			gw := benchGateway(b)
			ctx := context.Background()
			buf := make([]byte, kib<<10)
			var inside time.Duration
			attempt := func(context.Context, pgw.Source) (struct{}, pgw.Usage, error) {
				t0 := time.Now()
				touchLines(buf)
				inside += time.Since(t0)
				return struct{}{}, pgw.Usage{}, nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pgw.Call(ctx, gw, "BENCH", attempt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed()-inside)/float64(b.N), "overhead-ns/call")
		})
	}
}

// touchLines writes one byte in each 64-byte line of buf.
//
//go:noinline
func touchLines(buf []byte) {
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}
