package otel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
)

// statusErr is an SDK's error: a status, and a text that shows a secret
// pgw has no means to know.
type statusErr struct {
	StatusCode int
	text       string
}

func (e *statusErr) Error() string { return e.text }

// The spans (attributes, events, status) and the metrics of failed
// attempts name their outcome, status and error type, never an error's
// text: a secret in it reaches none of them.
func TestAnErrorsTextReachesNoSpanNorMetric(t *testing.T) {
	const secret = "sk-unknown-to-pgw-0123456789"
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "RERANK",
		"RERANK__SOURCES":      "a",
		"RERANK__MAX_ATTEMPTS": "2",
		"RERANK__A__BASE_URL":  "https://rerank.example/v1",
	})
	n := 0
	_, err := pgw.Call(context.Background(), r.gw, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
		n++
		if n == 1 {
			return 0, pgw.Usage{}, &statusErr{StatusCode: http.StatusInternalServerError, text: "upstream said " + secret}
		}
		return 0, pgw.Usage{}, errors.New("dial failed for " + secret)
	})
	require.Error(t, err)
	spans := r.spans.GetSpans()
	require.NotEmpty(t, spans)
	var seen string
	for _, s := range spans {
		seen += fmt.Sprint(attrs(s.Attributes))
		assert.NotContains(t, s.Status.Description, secret, s.Name)
		assert.NotContains(t, fmt.Sprint(attrs(s.Attributes)), secret, s.Name)
		for _, ev := range s.Events {
			assert.NotContains(t, ev.Name+fmt.Sprint(attrs(ev.Attributes)), secret, s.Name)
		}
	}
	assert.Contains(t, seen, "error.type:500", "the failed attempts are recorded, by status")
	for name, m := range r.metrics(t) {
		assert.NotContains(t, fmt.Sprintf("%+v", metricAttrs(m)), secret, name)
	}
}

// metricAttrs is every attribute set of a metric's data points.
func metricAttrs(m metricdata.Aggregation) []string {
	var out []string
	switch d := m.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes.Encoded(nil))
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes.Encoded(nil))
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes.Encoded(nil))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes.Encoded(nil))
		}
	}
	return out
}
