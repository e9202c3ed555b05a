package otel_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// The GenAI metrics have the units the conventions give them and carry the
// operation, provider, model and server attributes.
func TestGenAIMetricsUnitsAndAttributes(t *testing.T) {
	up := testutil.NewUpstream(t)
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": up.URL,
		"CHAT__SOLO__MODEL":    "model-s",
	})
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	units := map[string]string{}
	var tokenPoints []metricdata.HistogramDataPoint[int64]
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, pgwotel.ScopeName, sm.Scope.Name)
		assert.Equal(t, pgwotel.SchemaURL, sm.Scope.SchemaURL)
		for _, m := range sm.Metrics {
			units[m.Name] = m.Unit
			if m.Name == "gen_ai.client.token.usage" {
				tokenPoints = m.Data.(metricdata.Histogram[int64]).DataPoints
			}
		}
	}
	assert.Equal(t, "s", units["gen_ai.client.operation.duration"])
	assert.Equal(t, "{token}", units["gen_ai.client.token.usage"])
	assert.Equal(t, "s", units["gen_ai.client.operation.time_to_first_chunk"])
	require.Len(t, tokenPoints, 2, "one series per token type")
	host, port := serverPort(t, up.URL)
	for _, dp := range tokenPoints {
		got := map[string]any{}
		for _, kv := range dp.Attributes.ToSlice() {
			got[string(kv.Key)] = kv.Value.AsInterface()
		}
		tt := got["gen_ai.token.type"]
		assert.Contains(t, []any{"input", "output"}, tt)
		delete(got, "gen_ai.token.type")
		assert.Equal(t, map[string]any{
			"gen_ai.operation.name": "chat",
			"gen_ai.provider.name":  "openai",
			"gen_ai.request.model":  "model-s",
			"gen_ai.response.model": "model-s",
			"server.address":        host,
			"server.port":           port,
		}, got)
	}
}

// A call whose every attempt failed ends its span in error, with the
// result as error.type; each attempt's span is in error too.
func TestExhaustedCallSpanIsAnError(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusBadGateway})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "solo",
		"CHAT__SOLO__BASE_URL":    up.URL,
		"CHAT__SOLO__MODEL":       "model-s",
		"CHAT__MAX_ATTEMPTS":      "2",
		"CHAT__FAILURE_THRESHOLD": "100",
	})
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.Error(t, err)

	byName := r.ended()
	require.Len(t, byName[pgwotel.SpanCall], 1)
	call := byName[pgwotel.SpanCall][0]
	assert.Equal(t, codes.Error, call.Status.Code)
	ca := attrs(call.Attributes)
	assert.NotEmpty(t, ca["error.type"])
	assert.Equal(t, ca["pgw.result"], ca["error.type"])
	assert.NotEqual(t, "success", ca["pgw.result"])
	atts := byName["chat model-s"]
	require.Len(t, atts, 2)
	for _, a := range atts {
		assert.Equal(t, codes.Error, a.Status.Code)
		assert.Equal(t, "502", attrs(a.Attributes)["error.type"])
		assert.Equal(t, call.SpanContext.SpanID(), a.Parent.SpanID())
	}
}

// gatedStream is a one-source CHAT rig whose answer stops after its first
// chunk until release is closed (or the request goes away).
func gatedStream(t *testing.T) (*rig, chan struct{}) {
	up := testutil.NewUpstream(t)
	release := make(chan struct{})
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"one ", "two"},
		BeforeChunk: func(ctx context.Context, i int) {
			if i == 1 {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": up.URL,
		"CHAT__SOLO__MODEL":    "model-s",
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return r, release
}

func inFlightIsZero(t *testing.T, r *rig) {
	t.Helper()
	inflight, ok := r.metrics(t)["pgw_in_flight"].(metricdata.Sum[int64])
	require.True(t, ok)
	for _, dp := range inflight.DataPoints {
		assert.Zero(t, dp.Value, "no attempt left in flight")
	}
}

// A caller who cancels mid-stream ends the attempt's span and the call's,
// as canceled, and leaves nothing in flight.
func TestStreamCanceledMidStreamEndsItsSpans(t *testing.T) {
	r, _ := gatedStream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := r.gw.ChatStream(ctx, pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Recv()
	require.NoError(t, err)
	assert.Empty(t, r.spans.GetSpans())
	cancel()
	for err == nil {
		_, err = st.Recv()
	}
	require.True(t, errors.Is(err, context.Canceled), "%v", err)

	byName := r.ended()
	require.Len(t, byName["chat model-s"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	assert.Equal(t, "canceled", attrs(byName["chat model-s"][0].Attributes)["pgw.outcome"])
	assert.Equal(t, "canceled", attrs(byName[pgwotel.SpanCall][0].Attributes)["pgw.result"])
	inFlightIsZero(t, r)
}

// A stream the gateway's Close interrupts ends its spans as closed — not as
// the caller's cancellation — in error (the call returned ErrClosed), and
// leaves nothing in flight.
func TestStreamInterruptedByCloseEndsItsSpansAsClosed(t *testing.T) {
	r, _ := gatedStream(t)
	st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	require.NoError(t, r.gw.Close())
	_, err = st.Recv()
	require.ErrorIs(t, err, pgw.ErrClosed)
	require.NoError(t, st.Close())

	byName := r.ended()
	require.Len(t, byName["chat model-s"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	att, call := byName["chat model-s"][0], byName[pgwotel.SpanCall][0]
	assert.Equal(t, pgw.OutcomeClosed, attrs(att.Attributes)["pgw.outcome"])
	assert.Equal(t, pgw.OutcomeClosed, attrs(att.Attributes)["error.type"])
	assert.Equal(t, pgw.ResultClosed, attrs(call.Attributes)["pgw.result"])
	assert.Equal(t, pgw.ResultClosed, attrs(call.Attributes)["error.type"])
	assert.Equal(t, codes.Error, call.Status.Code)
	inFlightIsZero(t, r)
}

// A stream the caller closes before its end is abandoned, not failed: both
// spans end without an error status.
func TestStreamClosedEarlyIsAbandonedNotAnError(t *testing.T) {
	r, _ := gatedStream(t)
	st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	require.NoError(t, st.Close())

	byName := r.ended()
	require.Len(t, byName["chat model-s"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	att, call := byName["chat model-s"][0], byName[pgwotel.SpanCall][0]
	assert.Equal(t, "abandoned", attrs(att.Attributes)["pgw.outcome"])
	assert.Equal(t, codes.Unset, att.Status.Code)
	assert.NotContains(t, attrs(att.Attributes), "error.type")
	assert.Equal(t, "abandoned", attrs(call.Attributes)["pgw.result"])
	assert.Equal(t, codes.Unset, call.Status.Code)
	inFlightIsZero(t, r)
}

// A stream cut after its first chunk fails its attempt and its call, both
// spans in error.
func TestStreamCutAfterItsFirstChunkIsAnErrorSpan(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"one ", "two ", "three"}, Cut: true, CutAfter: 2})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": up.URL,
		"CHAT__SOLO__MODEL":    "model-s",
	})
	st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	defer st.Close()
	for err == nil {
		_, err = st.Recv()
	}
	require.False(t, errors.Is(err, io.EOF), "a cut stream is an error")

	byName := r.ended()
	require.Len(t, byName["chat model-s"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	att, call := byName["chat model-s"][0], byName[pgwotel.SpanCall][0]
	assert.Equal(t, codes.Error, att.Status.Code)
	assert.Equal(t, "failure", attrs(att.Attributes)["pgw.outcome"])
	assert.Equal(t, codes.Error, call.Status.Code)
	assert.Equal(t, call.SpanContext.SpanID(), att.Parent.SpanID())
	inFlightIsZero(t, r)
}

// An upstream's 429 with Retry-After is an attempt span in error that says
// how long pgw held the source off (pgw.retry_after), and the Anthropic
// backup the call fails over to gets the attempt's trace context.
func TestRetryAfterOnTheSpanAndTraceparentToAnthropic(t *testing.T) {
	oa, an := testutil.NewUpstream(t), testutil.NewUpstream(t)
	oa.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "30"})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "oa,an",
		"CHAT__OA__BASE_URL": oa.URL,
		"CHAT__AN__BASE_URL": an.URL, "CHAT__AN__PRIORITY": "1", "CHAT__AN__PROVIDER": "anthropic",
	})
	ctx, root := r.caller.Start(context.Background(), "handler")
	resp, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello, Model: "m"})
	root.End()
	require.NoError(t, err)
	require.Equal(t, "an", resp.Source)

	bySource := map[string]map[string]any{}
	for _, s := range r.ended()["chat m"] {
		a := attrs(s.Attributes)
		bySource[a["pgw.source"].(string)] = a
		if a["pgw.source"] == "an" {
			want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
			assert.Equal(t, want, an.LastRequest(testutil.Messages).Header.Get("traceparent"))
			assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext.TraceID())
		}
	}
	require.Len(t, bySource, 2)
	assert.Equal(t, 30.0, bySource["oa"]["pgw.retry_after"])
	assert.Equal(t, "429", bySource["oa"]["error.type"])
	assert.Equal(t, "throttle", bySource["oa"]["pgw.outcome"])
	assert.NotContains(t, bySource["an"], "error.type")
}

// A call that waits for an in-flight permit shows a pgw.wait event of
// reason quota_full on its span.
func TestQuotaWaitIsAnEvent(t *testing.T) {
	r, st := slotHeld(t, nil)
	done := make(chan error, 1)
	go func() {
		_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
		done <- err
	}()
	// The second call waits until the stream gives its permit back.
	require.Eventually(t, func() bool {
		rej, ok := r.metrics(t)["pgw_gate_rejections_total"].(metricdata.Sum[int64])
		return ok && len(rej.DataPoints) > 0
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, st.Close())
	require.NoError(t, <-done)

	var waited []map[string]any
	for _, c := range r.ended()[pgwotel.SpanCall] {
		for _, e := range c.Events {
			if e.Name == pgwotel.EventWait {
				waited = append(waited, attrs(e.Attributes))
			}
		}
	}
	require.Len(t, waited, 1, "only the second call waited")
	assert.Equal(t, "quota_full", waited[0]["pgw.wait.reason"])
	assert.Greater(t, waited[0]["pgw.wait.duration"].(float64), 0.0)
}
