package otel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
)

// histogramCount is how many values the float histogram name holds over
// every data point; 0 when nothing was ever recorded.
func histogramCount(m map[string]metricdata.Aggregation, name string) uint64 {
	h, _ := m[name].(metricdata.Histogram[float64])
	var n uint64
	for _, dp := range h.DataPoints {
		n += dp.Count
	}
	return n
}

// outcomeCount is pgw_attempts_total's value for outcome.
func outcomeCount(m map[string]metricdata.Aggregation, outcome string) int64 {
	sum, _ := m["pgw_attempts_total"].(metricdata.Sum[int64])
	var n int64
	for _, dp := range sum.DataPoints {
		if o, _ := dp.Attributes.Value("outcome"); o.AsString() == outcome {
			n += dp.Value
		}
	}
	return n
}

// An attempt its caller or the gateway cut short — a stream cancelled
// mid-way, interrupted by Close, or closed by its caller before its end — is
// counted by its outcome, but its time joins neither duration histogram
// (pgw_attempt_duration_seconds, gen_ai.client.operation.duration), as a
// lost hedge's does not: it says how long the caller waited or read, not
// how long the source takes. Its time to first chunk, which the source did
// deliver, is recorded.
func TestACutShortAttemptsTimeJoinsNoDurationHistogram(t *testing.T) {
	for _, tc := range []struct {
		outcome string
		cut     func(t *testing.T, r *rig, st *pgw.Stream, cancel context.CancelFunc)
	}{
		{pgw.OutcomeCanceled, func(t *testing.T, _ *rig, st *pgw.Stream, cancel context.CancelFunc) {
			cancel()
			var err error
			for err == nil {
				_, err = st.Recv()
			}
			require.ErrorIs(t, err, context.Canceled)
		}},
		{pgw.OutcomeClosed, func(t *testing.T, r *rig, st *pgw.Stream, _ context.CancelFunc) {
			require.NoError(t, r.gw.Close())
			_, err := st.Recv()
			require.True(t, errors.Is(err, pgw.ErrClosed), "%v", err)
		}},
		{pgw.OutcomeAbandoned, func(t *testing.T, _ *rig, st *pgw.Stream, _ context.CancelFunc) {
			require.NoError(t, st.Close())
		}},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			r, _ := gatedStream(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := r.gw.ChatStream(ctx, pgw.ChatRequest{Messages: hello})
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Recv()
			require.NoError(t, err)
			tc.cut(t, r, st, cancel)

			m := r.metrics(t)
			assert.Equal(t, int64(1), outcomeCount(m, tc.outcome), "counted by its outcome")
			assert.Zero(t, histogramCount(m, "pgw_attempt_duration_seconds"))
			assert.Zero(t, histogramCount(m, "gen_ai.client.operation.duration"))
			assert.Equal(t, uint64(1), histogramCount(m, "gen_ai.client.operation.time_to_first_chunk"),
				"the first chunk came: its time is the source's")
			inFlightIsZero(t, r)
		})
	}
}

// An attempt that panicked is counted by its outcome, but its time joins no
// duration histogram: it says when the caller's function broke, not how
// long the source takes.
func TestAPanickedAttemptsTimeJoinsNoDurationHistogram(t *testing.T) {
	r := newRig(t, map[string]string{
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "fast",
		"RERANK__FAST__BASE_URL": "https://rerank.example:8443/v1",
	})
	func() {
		defer func() { assert.NotNil(t, recover(), "the panic goes on to the caller") }()
		_, _ = pgw.Call(context.Background(), r.gw, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
			panic("caller bug")
		})
	}()
	m := r.metrics(t)
	assert.Equal(t, int64(1), outcomeCount(m, pgw.OutcomePanic), "counted by its outcome")
	assert.Zero(t, histogramCount(m, "pgw_attempt_duration_seconds"))
}
