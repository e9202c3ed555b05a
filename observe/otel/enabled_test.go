package otel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// With nothing configured the observer says it is disabled, so calls build
// no reports; once the global TracerProvider is set it reports there, the
// observer built before included, and so for the global MeterProvider's
// metrics. This is the only test that touches the globals.
func TestGlobalProviders(t *testing.T) {
	if globalSet {
		t.Skip("the global TracerProvider was set by an earlier run in this process (-count > 1)")
	}
	globalSet = true
	obs := pgwotel.New()
	require.False(t, observe.Enabled(obs), "global providers unset: nothing to report to")

	up := testutil.NewUpstream(t)
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "solo", "CHAT__SOLO__BASE_URL": up.URL,
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(obs))
	require.NoError(t, err)
	defer gw.Close()
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	assert.Empty(t, up.LastRequest(testutil.Chat).Header.Get("traceparent"), "a disabled observer injects nothing")

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp)
	require.True(t, observe.Enabled(obs))
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	names := map[string]bool{}
	for _, s := range spans.GetSpans() {
		names[s.Name] = true
	}
	assert.Equal(t, map[string]bool{pgwotel.SpanCall: true, "chat": true}, names)
	assert.NotEmpty(t, up.LastRequest(testutil.Chat).Header.Get("traceparent"))

	// The global MeterProvider set now receives the GenAI metrics of the
	// same observer, built before it was set.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	otel.SetMeterProvider(mp)
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	metrics := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = true
		}
	}
	assert.True(t, metrics["gen_ai.client.operation.duration"], "the global MeterProvider gets the metrics: %v", metrics)
}

var globalSet bool

// Explicit no-op providers disable the observer; a metric reader alone
// enables it.
func TestExplicitProviders(t *testing.T) {
	noop := pgwotel.New(pgwotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		pgwotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	assert.False(t, observe.Enabled(noop))

	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	metricsOnly := pgwotel.New(pgwotel.WithTracerProvider(tracenoop.NewTracerProvider()), pgwotel.WithMeterProvider(mp))
	assert.True(t, observe.Enabled(metricsOnly))

	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tracesOnly := pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	assert.True(t, observe.Enabled(tracesOnly))
}
