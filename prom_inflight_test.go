package pgw_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe/prom"
)

// Through the gateway, every way an attempt can end — success, a stream
// closed early or cut, embedding sub-batches, OCR pages, a cancellation, a
// caller error, a panic, a lost hedge, the governed SDK client's JSON and
// SSE answers, a stream open when the gateway closes — takes it out of
// pgw_in_flight again; a second Collector on the same registry is refused
// with AlreadyRegisteredError rather than double counting.
func TestPrometheusInFlightReturnsToZeroOnEveryWayAnAttemptEnds(t *testing.T) {
	up := testutil.NewUpstream(t)
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":               "CHAT,EMBEDDING,OCR,RERANK,HEDGED",
		"CHAT__SOURCES":            "a,b",
		"CHAT__A__BASE_URL":        up.URL,
		"CHAT__B__BASE_URL":        up.URL,
		"EMBEDDING__SOURCES":       "a",
		"EMBEDDING__A__BASE_URL":   up.URL,
		"EMBEDDING__A__BATCH_SIZE": "2",
		"OCR__SOURCES":             "a",
		"OCR__A__BASE_URL":         up.URL,
		"RERANK__SOURCES":          "a,b",
		"HEDGED__SOURCES":          "slow,fast",
		"HEDGED__HEDGE_AFTER_S":    "0.01",
		"HEDGED__FAST__PRIORITY":   "1",
	}, pgw.WithObserver(c))
	ctx := context.Background()

	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	// A stream closed early.
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	_, _ = st.Recv()
	require.NoError(t, st.Close())
	// A stream cut mid-answer.
	up.Enqueue(testutil.Chat, testutil.Reply{Cut: true, CutAfter: 1})
	st, err = gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}
	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b", "c", "d", "e"}})
	require.NoError(t, err)
	_, err = gw.OCRPages(ctx, []pgw.OCRRequest{{Image: tinyPNG(t)}, {Image: tinyPNG(t)}})
	require.NoError(t, err)
	// A cancelled call.
	cctx, cancel := context.WithCancel(ctx)
	_, err = pgw.Call(cctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		cancel()
		<-ctx.Done()
		return 0, pgw.Usage{}, ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	// A caller error, a panic.
	_, err = pgw.Call(ctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: 400}
	})
	require.Error(t, err)
	func() {
		defer func() { _ = recover() }()
		_, _ = pgw.Call(ctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
			panic("boom")
		})
	}()
	// A hedged call.
	_, err = pgw.Call(ctx, gw, "HEDGED", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		}
		return "x", pgw.Usage{}, nil
	})
	require.NoError(t, err)
	// SDK path
	hc := gw.HTTPClient("CHAT")
	req, _ := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	resp, err := hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err = hc.Do(req)
	require.NoError(t, err)
	buf := make([]byte, 10)
	_, _ = resp.Body.Read(buf)
	resp.Body.Close()
	// A stream open when the gateway closes.
	st, err = gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	_, _ = st.Recv()
	require.NoError(t, gw.Close())
	_ = st.Close()

	seen := requireNoneInFlight(t, reg)
	// One series per scope and source that ran (which of CHAT's and
	// RERANK's two sources ran is the weighted pick's choice).
	assert.GreaterOrEqual(t, seen, 6)
	// The early-closed stream and the SDK stream closed early; the stream
	// open at Close is the gateway's Close's.
	assert.Equal(t, 2.0, counter(t, reg, "pgw_calls_total", "CHAT", "abandoned"))
	assert.Equal(t, 1.0, counter(t, reg, "pgw_calls_total", "CHAT", "closed"))
	assert.Equal(t, 1.0, counter(t, reg, "pgw_attempts_total", "HEDGED", "hedge_lost"))

	err = reg.Register(prom.New())
	var are prometheus.AlreadyRegisteredError
	assert.ErrorAs(t, err, &are)
}

// counter reads the value of a counter series with the given scope and
// result (or outcome) label.
// requireNoneInFlight asserts that every pgw_in_flight series of reg is 0
// and returns how many there are.
func requireNoneInFlight(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	seen := 0
	for _, mf := range mfs {
		if mf.GetName() != "pgw_in_flight" {
			continue
		}
		for _, m := range mf.GetMetric() {
			seen++
			assert.Zero(t, m.GetGauge().GetValue(), "in flight: %v", m.GetLabel())
		}
	}
	return seen
}

func counter(t *testing.T, reg *prometheus.Registry, name, scope, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["scope"] == scope && (labels["result"] == value || labels["outcome"] == value) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{scope=%q,…=%q}", name, scope, value)
	return 0
}
