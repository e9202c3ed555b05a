package otel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The attempt that lost a hedge race was cancelled by pgw, not failed: its
// span is not an error span and has no error.type, and the GenAI duration
// metric does not count it as an error, like an abandoned stream.
func TestALostHedgeIsNotAnError(t *testing.T) {
	r, _, _ := hedgedChat(t)

	var lost []tracetest.SpanStub
	require.Eventually(t, func() bool {
		lost = nil
		for _, s := range r.spans.GetSpans() {
			if s.SpanKind == trace.SpanKindClient && attrs(s.Attributes)["pgw.source"] == "primary" {
				lost = append(lost, s)
			}
		}
		return len(lost) == 1
	}, 5*time.Second, time.Millisecond)
	got := attrs(lost[0].Attributes)
	assert.Equal(t, "hedge_lost", got["pgw.outcome"])
	assert.NotContains(t, got, "error.type")
	assert.Equal(t, codes.Unset, lost[0].Status.Code)

	dur, ok := r.metrics(t)["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	for _, dp := range dur.DataPoints {
		et, failed := dp.Attributes.Value("error.type")
		assert.False(t, failed, "no duration point counts as an error: %v", et.AsString())
	}
}
