package otel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// rig is a gateway reporting to an in-memory span exporter and a manual
// metric reader, and a caller's tracer from the same provider.
type rig struct {
	gw     *pgw.GatewayClient
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	caller trace.Tracer
}

func newRig(t *testing.T, env map[string]string, opts ...pgw.Option) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	r.caller = tp.Tracer("caller")
	s, err := config.FromMap(env)
	require.NoError(t, err)
	obs := pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithMeterProvider(mp))
	r.gw, err = pgw.New(context.Background(), *s, append([]pgw.Option{pgw.WithObserver(obs),
		pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: time.Millisecond})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.gw.Close() })
	return r
}

// ended returns the finished spans by name; a name that repeats keeps
// every span under it, in end order.
func (r *rig) ended() map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range r.spans.GetSpans() {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

func attrs(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func (r *rig) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func serverPort(t *testing.T, base string) (string, int64) {
	t.Helper()
	u := strings.TrimPrefix(base, "http://")
	host, port, ok := strings.Cut(strings.SplitN(u, "/", 2)[0], ":")
	require.True(t, ok, base)
	var p int64
	for _, c := range port {
		p = p*10 + int64(c-'0')
	}
	return host, p
}

func chatEnv(primary, backup *testutil.Upstream) map[string]string {
	return map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__MODEL":    "model-a",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__MODEL":     "model-b",
		"CHAT__BACKUP__PRIORITY":  "1",
	}
}

var hello = []pgw.Message{{Role: "user", Content: "Say hello"}}

// A call that fails over from a 503 to the backup is one pgw.call span under
// the caller's, with one CLIENT span per attempt, carrying exactly the GenAI
// and pgw attributes.
func TestFailoverSpanTree(t *testing.T) {
	primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	r := newRig(t, chatEnv(primary, backup))

	ctx, root := r.caller.Start(context.Background(), "handler")
	resp, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
	root.End()
	require.NoError(t, err)
	require.Equal(t, "backup", resp.Source)

	spans := r.spans.GetSpans()
	require.Len(t, spans, 4, "handler, pgw.call and two attempts")
	byName := r.ended()
	require.Len(t, byName["handler"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	require.Len(t, byName["chat model-a"], 1)
	require.Len(t, byName["chat model-b"], 1)
	handler, call := byName["handler"][0], byName[pgwotel.SpanCall][0]
	first, second := byName["chat model-a"][0], byName["chat model-b"][0]

	// The tree.
	assert.Equal(t, handler.SpanContext.SpanID(), call.Parent.SpanID())
	assert.Equal(t, call.SpanContext.SpanID(), first.Parent.SpanID())
	assert.Equal(t, call.SpanContext.SpanID(), second.Parent.SpanID())
	for _, s := range []tracetest.SpanStub{call, first, second} {
		assert.Equal(t, handler.SpanContext.TraceID(), s.SpanContext.TraceID())
	}
	assert.Equal(t, trace.SpanKindInternal, call.SpanKind)
	assert.Equal(t, trace.SpanKindClient, first.SpanKind)
	assert.Equal(t, trace.SpanKindClient, second.SpanKind)
	assert.False(t, first.StartTime.After(second.StartTime))
	assert.False(t, first.EndTime.After(second.StartTime), "the attempts do not overlap")
	assert.False(t, call.StartTime.After(first.StartTime))
	assert.False(t, call.EndTime.Before(second.EndTime))

	// The call.
	assert.Equal(t, map[string]any{
		"pgw.scope":     "CHAT",
		"pgw.operation": "chat",
		"pgw.result":    "success",
		"pgw.attempts":  int64(2),
		"pgw.source":    "backup",
		"pgw.waited":    float64(0),
		"pgw.waits":     int64(0),
	}, attrs(call.Attributes))
	assert.Equal(t, codes.Unset, call.Status.Code)

	// The failed attempt.
	pa, pp := serverPort(t, primary.URL)
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name":     "chat",
		"gen_ai.provider.name":      "openai",
		"gen_ai.request.model":      "model-a",
		"server.address":            pa,
		"server.port":               pp,
		"pgw.scope":                 "CHAT",
		"pgw.source":                "primary",
		"pgw.priority":              int64(0),
		"pgw.breaker.state":         "closed",
		"pgw.probe":                 false,
		"pgw.attempt":               int64(1),
		"pgw.outcome":               "failure",
		"http.response.status_code": int64(503),
		"error.type":                "503",
	}, attrs(first.Attributes))
	assert.Equal(t, codes.Error, first.Status.Code)

	// The attempt that answered.
	ba, bp := serverPort(t, backup.URL)
	got := attrs(second.Attributes)
	ttfc, ok := got["gen_ai.response.time_to_first_chunk"].(float64)
	require.True(t, ok, "time to first chunk recorded: %v", got)
	assert.Greater(t, ttfc, 0.0)
	delete(got, "gen_ai.response.time_to_first_chunk")
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name":      "chat",
		"gen_ai.provider.name":       "openai",
		"gen_ai.request.model":       "model-b",
		"gen_ai.response.model":      "model-b",
		"gen_ai.usage.input_tokens":  int64(resp.Usage.PromptTokens),
		"gen_ai.usage.output_tokens": int64(resp.Usage.CompletionTokens),
		"server.address":             ba,
		"server.port":                bp,
		"pgw.scope":                  "CHAT",
		"pgw.source":                 "backup",
		"pgw.priority":               int64(1),
		"pgw.breaker.state":          "closed",
		"pgw.probe":                  false,
		"pgw.attempt":                int64(2),
		"pgw.outcome":                "success",
	}, got)
	assert.Greater(t, resp.Usage.PromptTokens, 0)
	assert.Greater(t, resp.Usage.CompletionTokens, 0)
	assert.Equal(t, codes.Unset, second.Status.Code)

	// The metrics.
	m := r.metrics(t)
	dur, ok := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, dur.DataPoints, 2)
	for _, dp := range dur.DataPoints {
		assert.Equal(t, pgwotel.DurationBuckets, dp.Bounds)
		assert.Equal(t, uint64(1), dp.Count)
		et, failed := dp.Attributes.Value("error.type")
		model, _ := dp.Attributes.Value("gen_ai.request.model")
		if failed {
			assert.Equal(t, "503", et.AsString())
			assert.Equal(t, "model-a", model.AsString())
		} else {
			assert.Equal(t, "model-b", model.AsString())
			rm, _ := dp.Attributes.Value("gen_ai.response.model")
			assert.Equal(t, "model-b", rm.AsString())
		}
	}
	tok, ok := m["gen_ai.client.token.usage"].(metricdata.Histogram[int64])
	require.True(t, ok)
	sums := map[string]int64{}
	for _, dp := range tok.DataPoints {
		assert.Equal(t, pgwotel.TokenBuckets, dp.Bounds)
		tt, _ := dp.Attributes.Value("gen_ai.token.type")
		sums[tt.AsString()] += dp.Sum
	}
	assert.Equal(t, map[string]int64{"input": int64(resp.Usage.PromptTokens), "output": int64(resp.Usage.CompletionTokens)}, sums)
	ttfcM, ok := m["gen_ai.client.operation.time_to_first_chunk"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, ttfcM.DataPoints, 1)

	att, ok := m["pgw_attempts_total"].(metricdata.Sum[int64])
	require.True(t, ok)
	outcomes := map[string]int64{}
	for _, dp := range att.DataPoints {
		src, _ := dp.Attributes.Value("source")
		out, _ := dp.Attributes.Value("outcome")
		outcomes[src.AsString()+"/"+out.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"primary/failure": 1, "backup/success": 1}, outcomes)
	calls, ok := m["pgw_calls_total"].(metricdata.Sum[int64])
	require.True(t, ok)
	require.Len(t, calls.DataPoints, 1)
	res, _ := calls.DataPoints[0].Attributes.Value("result")
	assert.Equal(t, "success", res.AsString())
	inflight, ok := m["pgw_in_flight"].(metricdata.Sum[int64])
	require.True(t, ok)
	for _, dp := range inflight.DataPoints {
		assert.Zero(t, dp.Value, "no attempt left in flight")
	}
}

// waitSeen is a logger's handler that keeps nothing but whether the
// gateway began a wait.
type waitSeen struct{ seen *atomic.Bool }

func (h waitSeen) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h waitSeen) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "pgw: no source may run; waiting" {
		h.seen.Store(true)
	}
	return nil
}

func (h waitSeen) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h waitSeen) WithGroup(string) slog.Handler      { return h }

// A call that waits out a cooldown shows the wait as an event of its span,
// with its reason and length, and the probe that ended it.
func TestWaitIsAnEvent(t *testing.T) {
	// The call waits only if its retry finds the breaker its 503 opened
	// still open. The cooldown is real time, and a loaded machine can hold
	// the retry past it: the retry is then admitted as the probe at once,
	// with no wait. Until the gateway's Info line says the call waited, it
	// runs again on a new rig with twice the cooldown.
	var r *rig
	for cooldown := 200 * time.Millisecond; ; cooldown *= 2 {
		require.LessOrEqual(t, cooldown, 3200*time.Millisecond, "the call never waited for its cooldown")
		up := testutil.NewUpstream(t)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
		waited := &atomic.Bool{}
		r = newRig(t, map[string]string{
			"PGW_SCOPES":              "CHAT",
			"CHAT__SOURCES":           "solo",
			"CHAT__SOLO__BASE_URL":    up.URL,
			"CHAT__SOLO__MODEL":       "model-s",
			"CHAT__CIRCUIT_OPEN":      "wait",
			"CHAT__FAILURE_THRESHOLD": "1",
			"CHAT__COOLDOWN_S":        strconv.FormatFloat(cooldown.Seconds(), 'f', -1, 64),
		}, pgw.WithLogger(slog.New(waitSeen{waited})))
		_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
		require.NoError(t, err)
		if waited.Load() {
			break
		}
	}

	byName := r.ended()
	require.Len(t, byName[pgwotel.SpanCall], 1)
	call := byName[pgwotel.SpanCall][0]
	assert.False(t, call.Parent.IsValid(), "no caller span: the call is a root")
	require.Len(t, call.Events, 1)
	ev := call.Events[0]
	assert.Equal(t, pgwotel.EventWait, ev.Name)
	ea := attrs(ev.Attributes)
	assert.Equal(t, "circuit_open", ea["pgw.wait.reason"])
	assert.Equal(t, "solo", ea["pgw.source"])
	waited := ea["pgw.wait.duration"].(float64)
	assert.Greater(t, waited, 0.05, "the call waited out most of the cooldown")
	assert.Greater(t, ea["pgw.wait.expected"].(float64), 0.0)
	assert.GreaterOrEqual(t, ea["pgw.wait.naps"].(int64), int64(1))
	ca := attrs(call.Attributes)
	assert.Equal(t, waited, ca["pgw.waited"])
	assert.Equal(t, int64(1), ca["pgw.waits"])
	assert.Equal(t, int64(2), ca["pgw.attempts"])

	attempts := byName["chat model-s"]
	require.Len(t, attempts, 2)
	assert.Equal(t, "503", attrs(attempts[0].Attributes)["error.type"])
	probe := attrs(attempts[1].Attributes)
	assert.Equal(t, true, probe["pgw.probe"])
	assert.Equal(t, "half_open", probe["pgw.breaker.state"])
	// The event sits between the attempts, at the wait's start.
	assert.False(t, ev.Time.Before(attempts[0].EndTime))
	assert.True(t, ev.Time.Before(attempts[1].StartTime))

	wd, ok := r.metrics(t)["pgw_wait_duration_seconds"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, wd.DataPoints, 1)
	assert.Equal(t, uint64(1), wd.DataPoints[0].Count)
}

// A stream's attempt span stays open while the caller reads and ends when
// the stream does, with the time to its first chunk.
func TestStreamSpanEndsAtItsEnd(t *testing.T) {
	up := testutil.NewUpstream(t)
	release := make(chan struct{})
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"one ", "two ", "three"},
		BeforeChunk: func(ctx context.Context, i int) {
			if i == 2 {
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
	st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	defer st.Close()
	for range 2 {
		_, err := st.Recv()
		require.NoError(t, err)
	}
	assert.Empty(t, r.spans.GetSpans(), "no span ends while the stream runs")
	beforeEnd := time.Now()
	close(release)
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	byName := r.ended()
	require.Len(t, byName["chat model-s"], 1)
	require.Len(t, byName[pgwotel.SpanCall], 1)
	att := byName["chat model-s"][0]
	assert.False(t, att.EndTime.Before(beforeEnd), "the attempt span ends at the stream's end")
	a := attrs(att.Attributes)
	ttfc := a["gen_ai.response.time_to_first_chunk"].(float64)
	assert.Greater(t, ttfc, 0.0)
	assert.Less(t, ttfc, att.EndTime.Sub(att.StartTime).Seconds())
	assert.Equal(t, "success", a["pgw.outcome"])
	assert.Equal(t, "success", attrs(byName[pgwotel.SpanCall][0].Attributes)["pgw.result"])

	h, ok := r.metrics(t)["gen_ai.client.operation.time_to_first_chunk"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, h.DataPoints, 1)
	assert.InDelta(t, ttfc, h.DataPoints[0].Sum, 1e-9)
}

// The attempt's request carries the W3C trace context of the attempt's
// span, in the caller's trace.
func TestTraceparentReachesUpstream(t *testing.T) {
	up := testutil.NewUpstream(t)
	r := newRig(t, map[string]string{
		"PGW_SCOPES":                "CHAT,EMBEDDING",
		"CHAT__SOURCES":             "solo",
		"CHAT__SOLO__BASE_URL":      up.URL,
		"EMBEDDING__SOURCES":        "solo",
		"EMBEDDING__SOLO__BASE_URL": up.URL,
		"EMBEDDING__SOLO__MODEL":    "embed-1",
	})
	ctx, root := r.caller.Start(context.Background(), "handler")
	_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello, Model: "model-x"})
	require.NoError(t, err)
	_, err = r.gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b"}})
	require.NoError(t, err)
	root.End()

	byName := r.ended()
	for ep, name := range map[testutil.Endpoint]string{testutil.Chat: "chat model-x", testutil.Embeddings: "embeddings embed-1"} {
		require.Len(t, byName[name], 1, name)
		att := byName[name][0]
		tp := up.LastRequest(ep).Header.Get("traceparent")
		want := "00-" + att.SpanContext.TraceID().String() + "-" + att.SpanContext.SpanID().String() + "-01"
		assert.Equal(t, want, tp, name)
		assert.Equal(t, root.SpanContext().TraceID(), att.SpanContext.TraceID())
	}
	// Without a caller's span the call starts its own trace, and the
	// upstream still gets it.
	_, err = r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	tp := up.LastRequest(testutil.Chat).Header.Get("traceparent")
	assert.Len(t, tp, 55)
	assert.NotContains(t, tp, root.SpanContext().TraceID().String())
}

// Neither the prompt nor the answer reaches a span, an event or a metric.
func TestNoContentRecorded(t *testing.T) {
	const prompt, answer = "PROMPT-SECRET-7f3a", "ANSWER-SECRET-91cc"
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, Message: "overloaded"})
	up.Enqueue(testutil.Chat, testutil.Reply{Text: answer})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": up.URL,
		"CHAT__MAX_ATTEMPTS":   "2",
	})
	resp, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: prompt}}})
	require.NoError(t, err)
	require.Equal(t, answer, resp.Content)

	var all []string
	for _, s := range r.spans.GetSpans() {
		all = append(all, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			all = append(all, kv.Value.String())
		}
		for _, e := range s.Events {
			all = append(all, e.Name)
			for _, kv := range e.Attributes {
				all = append(all, kv.Value.String())
			}
		}
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			all = append(all, m.Name, m.Description)
		}
	}
	require.NotEmpty(t, all)
	text := strings.Join(all, "\n")
	assert.NotContains(t, text, prompt)
	assert.NotContains(t, text, answer)
	assert.NotContains(t, text, "overloaded", "no upstream error text")
}

// A custom function names no GenAI operation: its attempts are pgw.attempt
// spans without gen_ai attributes, and the GenAI metrics stay empty.
func TestCustomCall(t *testing.T) {
	r := newRig(t, map[string]string{
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "fast",
		"RERANK__FAST__BASE_URL": "https://rerank.example:8443/v1",
	})
	v, err := pgw.Call(context.Background(), r.gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		assert.True(t, trace.SpanContextFromContext(ctx).IsValid(), "fn runs under the attempt's span")
		return 7, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 7, v)
	byName := r.ended()
	require.Len(t, byName[pgwotel.SpanAttempt], 1)
	a := attrs(byName[pgwotel.SpanAttempt][0].Attributes)
	assert.Equal(t, "rerank.example", a["server.address"])
	assert.Equal(t, int64(8443), a["server.port"])
	for k := range a {
		assert.False(t, strings.HasPrefix(k, "gen_ai."), k)
	}
	m := r.metrics(t)
	if d, ok := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64]); ok {
		assert.Empty(t, d.DataPoints)
	}
	_, ok := m["pgw_calls_total"]
	assert.True(t, ok)
}

// The governed http.Client sends the attempt's trace context too, whole
// answers and streams alike.
func TestTraceparentReachesUpstreamThroughHTTPClient(t *testing.T) {
	up := testutil.NewUpstream(t)
	r := newRig(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": up.URL,
	})
	hc := r.gw.HTTPClient("CHAT")
	for _, stream := range []bool{false, true} {
		r.spans.Reset()
		ctx, root := r.caller.Start(context.Background(), "handler")
		body := `{"model":"sdk-model","messages":[{"role":"user","content":"hi"}]}`
		if stream {
			body = `{"model":"sdk-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		root.End()

		atts := r.ended()[pgwotel.SpanAttempt]
		require.Len(t, atts, 1, "stream=%v", stream)
		att := atts[0]
		want := "00-" + att.SpanContext.TraceID().String() + "-" + att.SpanContext.SpanID().String() + "-01"
		assert.Equal(t, want, up.LastRequest(testutil.Chat).Header.Get("traceparent"), "stream=%v", stream)
		assert.Equal(t, root.SpanContext().TraceID(), att.SpanContext.TraceID())
	}
}

// hedgedChat is a rig whose scope hedges after 10 ms onto a backup, and
// one Chat on it that the backup won: the primary would take a minute to
// answer. It returns the rig and both upstreams.
func hedgedChat(t *testing.T) (*rig, *testutil.Upstream, *testutil.Upstream) {
	t.Helper()
	primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
	primary.SetDefault(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Minute})
	env := chatEnv(primary, backup)
	env["CHAT__HEDGE_AFTER_S"] = "0.01"
	r := newRig(t, env)
	resp, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	require.Equal(t, "backup", resp.Source)
	return r, primary, backup
}

// A hedged call shows its hedge on the call's span: fired and won by the
// backup, and the lost attempt's span with its outcome; both attempts carry
// their own trace context upstream; pgw_hedges_total counts the events.
func TestHedgeEventsOnTheCallSpan(t *testing.T) {
	r, primary, backup := hedgedChat(t)

	var calls, atts []tracetest.SpanStub
	require.Eventually(t, func() bool {
		calls, atts = nil, nil
		for _, s := range r.spans.GetSpans() {
			switch {
			case s.Name == pgwotel.SpanCall:
				calls = append(calls, s)
			case s.SpanKind == trace.SpanKindClient:
				atts = append(atts, s)
			}
		}
		return len(calls) == 1 && len(atts) == 2
	}, 5*time.Second, time.Millisecond)
	var hedges []map[string]any
	for _, e := range calls[0].Events {
		if e.Name == pgwotel.EventHedge {
			hedges = append(hedges, attrs(e.Attributes))
		}
	}
	assert.Equal(t, []map[string]any{
		{"pgw.hedge.outcome": "fired", "pgw.hedge.primary": "primary", "pgw.source": "backup"},
		{"pgw.hedge.outcome": "won", "pgw.hedge.primary": "primary", "pgw.source": "backup"},
	}, hedges)
	outcomes := map[string]any{}
	for _, a := range atts {
		m := attrs(a.Attributes)
		outcomes[m["pgw.source"].(string)] = m["pgw.outcome"]
		assert.Equal(t, calls[0].SpanContext.SpanID(), a.Parent.SpanID(), "an attempt's span is the call's child")
	}
	assert.Equal(t, map[string]any{"primary": "hedge_lost", "backup": "success"}, outcomes)
	for _, a := range atts {
		up := primary
		if attrs(a.Attributes)["pgw.source"] == "backup" {
			up = backup
		}
		want := "00-" + a.SpanContext.TraceID().String() + "-" + a.SpanContext.SpanID().String() + "-01"
		assert.Equal(t, want, up.LastRequest(testutil.Chat).Header.Get("traceparent"), "a hedge's request carries its own span")
	}

	sum, ok := r.metrics(t)["pgw_hedges_total"].(metricdata.Sum[int64])
	require.True(t, ok, "pgw_hedges_total is recorded")
	events := map[string]int64{}
	for _, dp := range sum.DataPoints {
		ev, _ := dp.Attributes.Value("event")
		src, _ := dp.Attributes.Value("source")
		events[ev.AsString()+":"+src.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"fired:backup": 1, "won:backup": 1}, events)
}

// gen_ai.provider.name follows each source's PROVIDER.
func TestProviderNameFollowsTheSource(t *testing.T) {
	oa, az, an := testutil.NewUpstream(t), testutil.NewUpstream(t), testutil.NewUpstream(t)
	oa.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	az.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	r := newRig(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "oa,az,an",
		"CHAT__MAX_ATTEMPTS": "3",
		"CHAT__OA__BASE_URL": oa.URL, "CHAT__OA__PRIORITY": "0",
		"CHAT__AZ__BASE_URL": az.URL, "CHAT__AZ__PRIORITY": "1", "CHAT__AZ__PROVIDER": "azure",
		"CHAT__AN__BASE_URL": an.URL, "CHAT__AN__PRIORITY": "2", "CHAT__AN__PROVIDER": "anthropic",
	})
	resp, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello, Model: "m"})
	require.NoError(t, err)
	require.Equal(t, "an", resp.Source)
	got := map[string]any{}
	for _, s := range r.ended()["chat m"] {
		m := attrs(s.Attributes)
		got[m["pgw.source"].(string)] = m["gen_ai.provider.name"]
	}
	assert.Equal(t, map[string]any{"oa": "openai", "az": "azure.ai.openai", "an": "anthropic"}, got)
}
