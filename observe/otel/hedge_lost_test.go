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

// The attempt that lost a hedge race is counted by its outcome, but its
// time joins neither latency histogram — pgw_attempt_duration_seconds nor
// gen_ai.client.operation.duration: pgw cut it short, so it says how long
// the race took, not how long its source takes. observe/prom leaves it out
// alike.
func TestALostHedgesTimeJoinsNoLatencyHistogram(t *testing.T) {
	r, _, _ := hedgedChat(t)

	lostCounted := func(m map[string]metricdata.Aggregation) bool {
		sum, ok := m["pgw_attempts_total"].(metricdata.Sum[int64])
		if !ok {
			return false
		}
		for _, dp := range sum.DataPoints {
			if o, _ := dp.Attributes.Value("outcome"); o.AsString() == "hedge_lost" {
				return dp.Value == 1
			}
		}
		return false
	}
	var m map[string]metricdata.Aggregation
	require.Eventually(t, func() bool { m = r.metrics(t); return lostCounted(m) }, 5*time.Second, time.Millisecond)

	att, ok := m["pgw_attempt_duration_seconds"].(metricdata.Histogram[float64])
	require.True(t, ok)
	counts := map[string]uint64{}
	for _, dp := range att.DataPoints {
		src, _ := dp.Attributes.Value("source")
		counts[src.AsString()] += dp.Count
	}
	assert.Equal(t, map[string]uint64{"backup": 1}, counts, "the winner's time only")

	dur, ok := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	models := map[string]uint64{}
	for _, dp := range dur.DataPoints {
		model, _ := dp.Attributes.Value("gen_ai.request.model")
		models[model.AsString()] += dp.Count
	}
	assert.Equal(t, map[string]uint64{"model-b": 1}, models, "the winner's operation only")
}
