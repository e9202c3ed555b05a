package otel_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Concurrent calls each get their own trace: one pgw.call span under the
// caller's span of that goroutine, one attempt span under it, and the
// metrics count every call once.
func TestConcurrentCallsKeepTheirOwnSpanTrees(t *testing.T) {
	up := testutil.NewUpstream(t)
	r := newRig(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "solo", "CHAT__SOLO__BASE_URL": up.URL, "CHAT__SOLO__MODEL": "m"})
	const callers = 16
	roots := make([]trace.SpanContext, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ctx, root := r.caller.Start(context.Background(), "handler")
			defer root.End()
			roots[i] = root.SpanContext()
			_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
			assert.NoError(t, err)
		})
	}
	wg.Wait()

	byName := r.ended()
	require.Len(t, byName["pgw.call"], callers)
	require.Len(t, byName["chat m"], callers)
	callOf := map[trace.SpanID]trace.TraceID{}
	for _, c := range byName["pgw.call"] {
		callOf[c.SpanContext.SpanID()] = c.SpanContext.TraceID()
	}
	traces := map[trace.TraceID]bool{}
	for _, root := range roots {
		traces[root.TraceID()] = true
	}
	require.Len(t, traces, callers, "one trace per caller")
	seen := map[trace.TraceID]int{}
	for _, a := range byName["chat m"] {
		tid, ok := callOf[a.Parent.SpanID()]
		require.True(t, ok, "each attempt is the child of a pgw.call span")
		assert.Equal(t, tid, a.SpanContext.TraceID(), "in its call's trace")
		seen[tid]++
	}
	for tid := range traces {
		assert.Equal(t, 1, seen[tid], "one attempt in trace %s", tid)
	}
	calls, ok := r.metrics(t)["pgw_calls_total"].(metricdata.Sum[int64])
	require.True(t, ok)
	var n int64
	for _, dp := range calls.DataPoints {
		n += dp.Value
	}
	assert.Equal(t, int64(callers), n)
}
