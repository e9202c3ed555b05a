package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
)

// The rate-limit figures an upstream advertises in its answer's headers
// are the quota-headroom gauges observe/prom also exports, under the same
// names and labels (scope, source, window).
func TestAdvertisedHeadroomGauges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("x-ratelimit-limit-requests", "500")
		h.Set("x-ratelimit-remaining-requests", "499")
		h.Set("x-ratelimit-reset-requests", "120ms")
		h.Set("x-ratelimit-limit-tokens", "30000")
		h.Set("x-ratelimit-remaining-tokens", "29000")
		h.Set("x-ratelimit-reset-tokens", "2s")
		h.Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\n"+"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": srv.URL + "/v1",
	})
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)

	m := r.metrics(t)
	want := map[string]map[string]float64{
		"pgw_advertised_limit":         {"requests": 500, "tokens": 30000},
		"pgw_advertised_remaining":     {"requests": 499, "tokens": 29000},
		"pgw_advertised_reset_seconds": {"requests": 0.12, "tokens": 2},
	}
	for name, windows := range want {
		data, ok := m[name]
		require.True(t, ok, "%s is recorded", name)
		got := map[string]float64{}
		switch g := data.(type) {
		case metricdata.Gauge[int64]:
			for _, dp := range g.DataPoints {
				got[label(t, dp.Attributes.ToSlice())] = float64(dp.Value)
			}
		case metricdata.Gauge[float64]:
			for _, dp := range g.DataPoints {
				got[label(t, dp.Attributes.ToSlice())] = dp.Value
			}
		default:
			t.Fatalf("%s is a %T, not a gauge", name, data)
		}
		assert.Equal(t, windows, got, name)
	}
}

// label checks the labels observe/prom gives the advertised gauges and
// returns the window's.
func label(t *testing.T, kvs []attribute.KeyValue) string {
	t.Helper()
	a := attrs(kvs)
	assert.Equal(t, "CHAT", a["scope"])
	assert.Equal(t, "solo", a["source"])
	assert.Len(t, a, 3)
	w, _ := a["window"].(string)
	return w
}
