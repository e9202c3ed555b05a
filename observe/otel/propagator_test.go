package otel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// spanIDCarrier is a propagator of its own: it writes the attempt's span id
// under x-test-span and nothing else.
type spanIDCarrier struct{}

func (spanIDCarrier) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	c.Set("x-test-span", trace.SpanContextFromContext(ctx).SpanID().String())
}
func (spanIDCarrier) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context {
	return ctx
}
func (spanIDCarrier) Fields() []string { return []string{"x-test-span"} }

// WithPropagator replaces the default W3C Trace Context: the attempt's
// request carries what the given propagator writes, and no traceparent.
func TestWithPropagatorDecidesWhatTheUpstreamGets(t *testing.T) {
	up := testutil.NewUpstream(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s, err := config.FromMap(map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "solo", "CHAT__SOLO__BASE_URL": up.URL})
	require.NoError(t, err)
	obs := pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithPropagator(spanIDCarrier{}))
	gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })

	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello, Model: "m"})
	require.NoError(t, err)
	h := up.LastRequest(testutil.Chat).Header
	assert.Empty(t, h.Get("traceparent"), "the default propagator is replaced")
	var attempt []tracetest.SpanStub
	for _, sp := range spans.GetSpans() {
		if sp.Name == "chat m" {
			attempt = append(attempt, sp)
		}
	}
	require.Len(t, attempt, 1)
	assert.Equal(t, attempt[0].SpanContext.SpanID().String(), h.Get("x-test-span"), "the attempt's span, as the propagator writes it")
}

// The pinned semantic-conventions version is the schema the tracer's spans
// carry.
func TestSpansCarryThePinnedSchema(t *testing.T) {
	assert.Equal(t, "1.41.0", pgwotel.SemConvVersion)
	assert.True(t, strings.HasSuffix(pgwotel.SchemaURL, "/"+pgwotel.SemConvVersion), pgwotel.SchemaURL)
	assert.Equal(t, "github.com/pgw-go/pgw/observe/otel", pgwotel.ScopeName)

	up := testutil.NewUpstream(t)
	r := newRig(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "solo", "CHAT__SOLO__BASE_URL": up.URL})
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	got := r.spans.GetSpans()
	require.NotEmpty(t, got)
	for _, sp := range got {
		assert.Equal(t, pgwotel.ScopeName, sp.InstrumentationScope.Name, sp.Name)
		assert.Equal(t, pgwotel.SchemaURL, sp.InstrumentationScope.SchemaURL, sp.Name)
	}
}
