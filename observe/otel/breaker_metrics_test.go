package otel_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// pgw's own metrics under observe/prom's names: a trip sets
// pgw_breaker_state to 1 (open) and pgw_breaker_forced to 0 (no override)
// for the source, and the failed attempt's latency lands in
// pgw_attempt_duration_seconds with observe/prom's buckets.
func TestBreakerGaugesAndAttemptDurationUnderPromsNames(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	r := tripOnceRig(t, up)
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.Error(t, err)

	m := r.metrics(t)
	for name, want := range map[string]int64{"pgw_breaker_state": 1, "pgw_breaker_forced": 0} {
		g, ok := m[name].(metricdata.Gauge[int64])
		require.True(t, ok, "%s is an int64 gauge: %T", name, m[name])
		require.Len(t, g.DataPoints, 1, name)
		dp := g.DataPoints[0]
		scope, _ := dp.Attributes.Value("scope")
		source, _ := dp.Attributes.Value("source")
		assert.Equal(t, "CHAT", scope.AsString(), name)
		assert.Equal(t, "only", source.AsString(), name)
		assert.Equal(t, want, dp.Value, name)
	}
	h, ok := m["pgw_attempt_duration_seconds"].(metricdata.Histogram[float64])
	require.True(t, ok, "%T", m["pgw_attempt_duration_seconds"])
	require.Len(t, h.DataPoints, 1)
	assert.Equal(t, uint64(1), h.DataPoints[0].Count)
	assert.Equal(t, pgwotel.AttemptBuckets, h.DataPoints[0].Bounds)
}

// A source whose breaker never changed state still has its gauges, closed
// and without override, from its first attempt on — as observe/prom shows
// it — so a dashboard lists every source that ran; a later trip is not
// overwritten by the next attempt's first-sight value.
func TestBreakerGaugesExistFromASourcesFirstAttempt(t *testing.T) {
	up := testutil.NewUpstream(t)
	r := tripOnceRig(t, up)
	gauge := func(name string) []metricdata.DataPoint[int64] {
		g, ok := r.metrics(t)[name].(metricdata.Gauge[int64])
		require.True(t, ok, "%s is an int64 gauge", name)
		return g.DataPoints
	}
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	for _, name := range []string{"pgw_breaker_state", "pgw_breaker_forced"} {
		dps := gauge(name)
		require.Len(t, dps, 1, name)
		source, _ := dps[0].Attributes.Value("source")
		assert.Equal(t, "only", source.AsString(), name)
		assert.Equal(t, int64(0), dps[0].Value, name)
	}

	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	_, err = r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.Error(t, err)
	dps := gauge("pgw_breaker_state")
	require.Len(t, dps, 1)
	assert.Equal(t, int64(1), dps[0].Value, "the trip is what the gauge shows")
}

// tripOnceRig is a gateway of one source, "only", on up, whose breaker
// opens at its first failure, with one attempt per call and no wait.
func tripOnceRig(t *testing.T, up *testutil.Upstream) *rig {
	t.Helper()
	return newRig(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "only",
		"CHAT__ONLY__BASE_URL":    up.URL,
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__CIRCUIT_OPEN":      "fail_fast",
		"CHAT__MAX_ATTEMPTS":      "1",
	})
}
