package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// auditWaitRig is newRig's gateway with also obs observing it.
func auditWaitRig(t *testing.T, env map[string]string, obs observe.Observer) *rig {
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
	ot := pgwotel.New(pgwotel.WithTracerProvider(tp), pgwotel.WithMeterProvider(mp))
	r.gw, err = pgw.New(context.Background(), *s, pgw.WithObserver(observe.Multi(ot, obs)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.gw.Close() })
	return r
}

// auditWaitErrType returns the error.type of the call span's one
// "pgw.wait" event, and the span's own.
func auditWaitErrType(t *testing.T, call tracetest.SpanStub) (wait, span string) {
	t.Helper()
	n := 0
	for _, e := range call.Events {
		if e.Name != pgwotel.EventWait {
			continue
		}
		n++
		wait, _ = attrs(e.Attributes)["error.type"].(string)
	}
	require.Equal(t, 1, n, "the call waited once")
	span, _ = attrs(call.Attributes)["error.type"].(string)
	return wait, span
}

// The package comment's account of a wait given up: the wait's event names
// the error that ended the wait, the call's span its result, which is its
// error.type, with an error status — for a stalled call and for one whose
// deadline ended its wait.
func TestAWaitGivenUpAndItsCallNameTheirErrorsAsDocumented(t *testing.T) {
	t.Run("stalled", func(t *testing.T) {
		r, st := slotHeld(t, map[string]string{"CHAT__QUOTA_FULL": "wait", "CHAT__STALL_WINDOW_S": "0.05"})
		_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		require.Equal(t, pgw.ReasonStalled, ase.Reason)
		require.NoError(t, st.Close())

		calls := r.ended()[pgwotel.SpanCall]
		require.Len(t, calls, 2, "the stream's call and the stalled one")
		call := calls[0] // the stalled call ended first
		wait, span := auditWaitErrType(t, call)
		assert.Equal(t, pgw.CodeExhausted, wait)
		assert.Equal(t, pgw.ResultStalled, span)
		assert.Equal(t, pgw.ResultStalled, attrs(call.Attributes)["pgw.result"])
		assert.Equal(t, codes.Error, call.Status.Code)
	})
	t.Run("deadline", func(t *testing.T) {
		r, st := slotHeld(t, map[string]string{"CHAT__QUOTA_FULL": "wait", "CHAT__STALL_WINDOW_S": "600"})
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, st.Close())

		calls := r.ended()[pgwotel.SpanCall]
		require.Len(t, calls, 2)
		call := calls[0]
		wait, span := auditWaitErrType(t, call)
		assert.Equal(t, "deadline_exceeded", wait)
		assert.Equal(t, pgw.ResultCanceled, span)
		assert.Equal(t, codes.Error, call.Status.Code)
	})
	// The gateway's Close, not the caller, ends the wait: closed on both,
	// as the call's attempts are closed, not canceled.
	t.Run("close", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		waiting := make(chan struct{}, 1)
		r := auditWaitRig(t, map[string]string{
			"PGW_SCOPES":                "CHAT",
			"CHAT__SOURCES":             "solo",
			"CHAT__SOLO__BASE_URL":      up.URL,
			"CHAT__SOLO__MAX_IN_FLIGHT": "1",
			"CHAT__QUOTA_FULL":          "wait",
			"CHAT__STALL_WINDOW_S":      "600",
		}, observe.Funcs{WaitStart: func(observe.WaitStart) { waiting <- struct{}{} }})
		st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
		require.NoError(t, err)
		_, err = st.Recv() // the stream holds the only slot
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
			done <- err
		}()
		<-waiting
		require.NoError(t, r.gw.Close())
		require.ErrorIs(t, <-done, pgw.ErrClosed)

		var waited []tracetest.SpanStub
		for _, c := range r.ended()[pgwotel.SpanCall] {
			if attrs(c.Attributes)["pgw.waits"] == int64(1) {
				waited = append(waited, c)
			}
		}
		require.Len(t, waited, 1, "the call that waited")
		wait, span := auditWaitErrType(t, waited[0])
		assert.Equal(t, pgw.ResultClosed, wait)
		assert.Equal(t, pgw.ResultClosed, span)
	})
}
