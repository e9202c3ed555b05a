package otel_test

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// The observer's cost per governed call: pgw.Call of a function that
// returns at once (in-memory gates, no network), so the difference between
// the cases is the observer's. "noop" is an observer whose providers record
// nothing (as with no provider configured); "sdk" records every span
// (AlwaysSample, batched to an exporter that drops them) and every metric
// (a manual reader).
func BenchmarkObserverCall(b *testing.B) {
	for _, tc := range benchCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			s, err := config.FromMap(map[string]string{
				"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "one",
				"RERANK__ONE__BASE_URL": "https://rerank.example/v1", "RERANK__ONE__MODEL": "rr-1",
			})
			if err != nil {
				b.Fatal(err)
			}
			gw, err := pgw.New(context.Background(), *s, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			fn := func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil }
			ctx := context.Background()
			b.ReportAllocs()
			cpu0, ok := cpuTime()
			for b.Loop() {
				if _, err := pgw.Call(ctx, gw, "RERANK", fn); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, ok)
		})
	}
}

// The same for a chat call over loopback HTTP to the fake upstream: the
// observer's share of a real request.
func BenchmarkObserverChat(b *testing.B) {
	up := testutil.NewUpstream(b)
	for _, tc := range benchCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			s, err := config.FromMap(map[string]string{
				"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "one",
				"CHAT__ONE__BASE_URL": up.URL, "CHAT__ONE__MODEL": "m-1",
			})
			if err != nil {
				b.Fatal(err)
			}
			gw, err := pgw.New(context.Background(), *s, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			ctx := context.Background()
			req := pgw.ChatRequest{Messages: hello}
			b.ReportAllocs()
			cpu0, ok := cpuTime()
			for b.Loop() {
				if _, err := gw.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, ok)
		})
	}
}

type benchCase struct {
	name string
	opts []pgw.Option
}

func benchCases(b *testing.B) []benchCase {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	syncTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = syncTP.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return []benchCase{
		{name: "none"},
		{name: "noop", opts: []pgw.Option{pgw.WithObserver(pgwotel.New(
			pgwotel.WithTracerProvider(tracenoop.NewTracerProvider()), pgwotel.WithMeterProvider(metricnoop.NewMeterProvider())))}},
		{name: "sdk", opts: []pgw.Option{pgw.WithObserver(pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithMeterProvider(mp)))}},
		{name: "sdk-sync", opts: []pgw.Option{pgw.WithObserver(pgwotel.New(pgwotel.WithTracerProvider(syncTP), pgwotel.WithMeterProvider(mp)))}},
	}
}

// reportCPU reports the process's CPU time per operation since cpu0
// (cpu-ns/op): every goroutine's, the span processor's and the fake
// upstream's included, but not the time spent waiting for a core, which on
// a loaded machine is most of ns/op.
func reportCPU(b *testing.B, cpu0 time.Duration, ok bool) {
	cpu1, ok1 := cpuTime()
	if ok && ok1 && b.N > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
