package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgw-go/pgw"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

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
}
