package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// tally counts pgw's events under the series names and labels of pgw's own
// metrics, and keeps what the gauges should show.
type tally struct {
	mu       sync.Mutex
	counts   map[string]int64
	inFlight map[string]int64 // scope/source → attempts running
	state    map[string]int64 // scope/source → last state seen
}

func (t *tally) add(series string) {
	t.mu.Lock()
	t.counts[series]++
	t.mu.Unlock()
}

func (t *tally) observer() observe.Funcs {
	return observe.Funcs{
		AttemptStart: func(e observe.AttemptStart) {
			t.mu.Lock()
			t.inFlight[e.Scope+"/"+e.Source]++
			t.mu.Unlock()
		},
		Attempt: func(e observe.AttemptRecord) {
			t.add(fmt.Sprintf("pgw_attempts_total{outcome=%s,scope=%s,source=%s}", e.Outcome, e.Scope, e.Source))
			t.mu.Lock()
			t.inFlight[e.Scope+"/"+e.Source]--
			t.mu.Unlock()
		},
		StateChange: func(e observe.StateChange) {
			t.mu.Lock()
			t.state[e.Scope+"/"+e.Source] = int64(e.To)
			t.mu.Unlock()
		},
		Rejection: func(e observe.Rejection) {
			t.add(fmt.Sprintf("pgw_gate_rejections_total{reason=%s,scope=%s,source=%s}", e.Reason, e.Scope, e.Source))
		},
		WaitEnd: func(e observe.WaitEnd) { t.add(fmt.Sprintf("pgw_wait_duration_seconds{scope=%s}", e.Scope)) },
		Call: func(e observe.CallResult) {
			t.add(fmt.Sprintf("pgw_calls_total{result=%s,scope=%s}", e.Result, e.Scope))
		},
		Hedge: func(e observe.Hedge) {
			src := e.Source
			if src == "" {
				src = e.Primary
			}
			t.add(fmt.Sprintf("pgw_hedges_total{event=%s,scope=%s,source=%s}", e.Event, e.Scope, src))
		},
	}
}

func (t *tally) rejections(scope string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for k, v := range t.counts {
		if strings.HasPrefix(k, "pgw_gate_rejections_total{") && strings.Contains(k, ",scope="+scope+",") {
			n += v
		}
	}
	return n
}

// series names a data point as tally does: the metric's name and its
// attributes (all strings), sorted by key as attribute sets are.
func series(name string, set attribute.Set) string {
	s := name + "{"
	for i, kv := range set.ToSlice() {
		if i > 0 {
			s += ","
		}
		s += string(kv.Key) + "=" + kv.Value.AsString()
	}
	return s + "}"
}

// An SRE's day through one gateway: successes, a 503 and a 429 that fail
// over, an auth error that opens a breaker a waiting call then waits out, a
// breaker left open, quota waits (one admitted, one given up), a cancelled
// call, streams that succeed, are cut and are abandoned, and a hedged call.
// pgw's own OpenTelemetry metrics and the spans count exactly what the
// events report, the in-flight counters are back at 0, and the breaker
// gauges show what the breakers say.
func TestOTelMetricsAndSpansAgreeWithTheEvents(t *testing.T) {
	upA, upB, upQ := testutil.NewUpstream(t), testutil.NewUpstream(t), testutil.NewUpstream(t)
	env := map[string]string{
		"PGW_SCOPES":              "CHAT,AUTH,LOCKED,QUOTA,CUSTOM,HEDGED",
		"CHAT__SOURCES":           "a,b",
		"CHAT__A__BASE_URL":       upA.URL,
		"CHAT__B__BASE_URL":       upB.URL,
		"CHAT__B__PRIORITY":       "1",
		"AUTH__SOURCES":           "solo",
		"AUTH__CIRCUIT_OPEN":      "wait",
		"AUTH__COOLDOWN_S":        "0.05",
		"LOCKED__SOURCES":         "l",
		"QUOTA__SOURCES":          "q",
		"QUOTA__Q__BASE_URL":      upQ.URL,
		"QUOTA__Q__MAX_IN_FLIGHT": "1",
		"CUSTOM__SOURCES":         "x",
		"HEDGED__SOURCES":         "slow,fast",
		"HEDGED__FAST__PRIORITY":  "1",
		"HEDGED__HEDGE_AFTER_S":   "0.01",
		"HEDGED__HEDGE_BUDGET":    "1",
	}
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	ev := &tally{counts: map[string]int64{}, inFlight: map[string]int64{}, state: map[string]int64{}}
	s, err := config.FromMap(env)
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s,
		pgw.WithObserver(observe.Multi(pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithMeterProvider(mp)), ev.observer())),
		pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: time.Millisecond}))
	require.NoError(t, err)
	ctx := context.Background()
	msg := pgw.ChatRequest{Messages: hello}
	drain := func(st *pgw.Stream) error {
		defer func() { _ = st.Close() }()
		for {
			if _, err := st.Recv(); err != nil {
				return err
			}
		}
	}

	for range 2 {
		_, err = gw.Chat(ctx, msg)
		require.NoError(t, err)
	}
	upA.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	resp, err := gw.Chat(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, "b", resp.Source, "the 503 fails over")
	// Streams: to the end, cut after a chunk, abandoned.
	st, err := gw.ChatStream(ctx, msg)
	require.NoError(t, err)
	require.ErrorIs(t, drain(st), io.EOF)
	upA.Enqueue(testutil.Chat, testutil.Reply{Cut: true, CutAfter: 1})
	st, err = gw.ChatStream(ctx, msg)
	require.NoError(t, err)
	err = drain(st)
	require.Error(t, err)
	require.NotErrorIs(t, err, io.EOF, "the stream was cut")
	st, err = gw.ChatStream(ctx, msg)
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	require.NoError(t, st.Close())
	// Last on CHAT, as its Retry-After holds a off for a second.
	upA.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	resp, err = gw.Chat(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, "b", resp.Source, "the 429 fails over")

	// A 401 opens the breaker; the call waits out the cooldown and probes.
	var authCalls atomic.Int32
	_, err = pgw.Call(ctx, gw, "AUTH", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		if authCalls.Add(1) == 1 {
			return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusUnauthorized}
		}
		return 1, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	// A 403 opens a fail_fast breaker that stays open.
	for range 2 {
		_, err = pgw.Call(ctx, gw, "LOCKED", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
			return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusForbidden}
		})
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe)
	}

	// Quota waits: one call holds the only slot; one waiter gives up, the
	// next is admitted when the slot comes back.
	release, holding := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw, "QUOTA", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
			close(holding)
			<-release
			return 1, pgw.Usage{}, nil
		})
		held <- err
	}()
	<-holding
	quotaCall := func(ctx context.Context, done chan<- error) {
		_, err := pgw.Call(ctx, gw, "QUOTA", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
			return 1, pgw.Usage{}, nil
		})
		done <- err
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go quotaCall(cctx, gaveUp)
	require.Eventually(t, func() bool { return ev.rejections("QUOTA") > 0 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	seen := ev.rejections("QUOTA")
	admitted := make(chan error, 1)
	go quotaCall(ctx, admitted)
	require.Eventually(t, func() bool { return ev.rejections("QUOTA") > seen }, 5*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-admitted)

	// The caller cancels while its attempt runs.
	cctx, cancel = context.WithCancel(ctx)
	_, err = pgw.Call(cctx, gw, "CUSTOM", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		cancel()
		<-ctx.Done()
		return 0, pgw.Usage{}, ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)

	// A hedge wins over an attempt that waits for its ctx.
	v, err := pgw.Call(ctx, gw, "HEDGED", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		}
		return src.Name, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "fast", v)

	real := map[string]int64{}
	for _, src := range [][2]string{{"CHAT", "a"}, {"CHAT", "b"}, {"AUTH", "solo"}, {"LOCKED", "l"}, {"QUOTA", "q"}, {"CUSTOM", "x"}, {"HEDGED", "slow"}, {"HEDGED", "fast"}} {
		snap, err := gw.Snapshot(ctx, src[0], src[1])
		require.NoError(t, err)
		real[src[0]+"/"+src[1]] = int64(snap.State)
	}
	require.Equal(t, int64(gate.Open), real["LOCKED/l"], "the 403 left its breaker open")
	require.Equal(t, int64(gate.Closed), real["AUTH/solo"], "the probe closed the 401's breaker")
	require.NoError(t, gw.Close()) // the hedge's loser has reported too

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	counted := map[string]int64{}
	inFlight, state := map[string]int64{}, map[string]int64{}
	key := func(set attribute.Set) string {
		sc, _ := set.Value("scope")
		so, _ := set.Value("source")
		return sc.AsString() + "/" + so.AsString()
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if m.Name == "pgw_in_flight" {
						inFlight[key(dp.Attributes)] = dp.Value
						continue
					}
					counted[series(m.Name, dp.Attributes)] = dp.Value
				}
			case metricdata.Gauge[int64]:
				if m.Name == "pgw_breaker_state" {
					for _, dp := range d.DataPoints {
						state[key(dp.Attributes)] = dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name == "pgw_wait_duration_seconds" {
					for _, dp := range d.DataPoints {
						counted[series(m.Name, dp.Attributes)] = int64(dp.Count)
					}
				}
			}
		}
	}
	assert.Equal(t, ev.counts, counted, "pgw's OpenTelemetry counters against the events")
	for src, n := range inFlight {
		assert.Zero(t, n, "pgw_in_flight of %s", src)
	}
	assert.Len(t, inFlight, len(ev.inFlight), "a series for each source that ran")
	for src, s := range state {
		assert.Equal(t, ev.state[src], s, "pgw_breaker_state of %s against its state changes", src)
		assert.Equal(t, real[src], s, "pgw_breaker_state of %s against its breaker", src)
	}

	fromSpans := map[string]int64{}
	for _, sp := range spans.GetSpans() {
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range sp.Attributes {
			a[kv.Key] = kv.Value
		}
		scope := a[pgwotel.AttrScope].AsString()
		if sp.Name != pgwotel.SpanCall {
			fromSpans[fmt.Sprintf("pgw_attempts_total{outcome=%s,scope=%s,source=%s}", a[pgwotel.AttrOutcome].AsString(), scope, a[pgwotel.AttrSource].AsString())]++
			continue
		}
		fromSpans[fmt.Sprintf("pgw_calls_total{result=%s,scope=%s}", a[pgwotel.AttrResult].AsString(), scope)]++
		if n := a[pgwotel.AttrWaits].AsInt64(); n > 0 {
			fromSpans[fmt.Sprintf("pgw_wait_duration_seconds{scope=%s}", scope)] += n
		}
		var events int64
		for _, e := range sp.Events {
			if e.Name == pgwotel.EventWait {
				events++
			}
		}
		assert.Equal(t, a[pgwotel.AttrWaits].AsInt64(), events, "a pgw.wait event for each wait of the call")
	}
	for k, v := range ev.counts {
		if strings.HasPrefix(k, "pgw_attempts_total{") || strings.HasPrefix(k, "pgw_calls_total{") || strings.HasPrefix(k, "pgw_wait_duration_seconds{") {
			assert.Equal(t, v, fromSpans[k], "spans of %s", k)
			delete(fromSpans, k)
		}
	}
	assert.Empty(t, fromSpans, "spans the events do not report")
}
