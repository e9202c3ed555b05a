package breaker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

type ctxKey struct{}

func TestStateChangeCarriesTheEndedCountsAndTheCallersContext(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second}, Config{OnStateChange: []func(StateChange){c.listen}})
	ctx := context.WithValue(t.Context(), ctxKey{}, "caller")
	require.NoError(t, b.Execute(ctx, succeed))
	_ = b.Execute(ctx, fail)
	_ = b.Execute(ctx, fail)
	evs := c.events()
	require.Len(t, evs, 1)
	assert.Equal(t, Counts{Requests: 3, TotalSuccesses: 1, TotalFailures: 2, ConsecutiveFailures: 2}, evs[0].Counts)
	assert.Equal(t, "caller", evs[0].Context.Value(ctxKey{}))
	assert.Equal(t, Counts{}, b.Counts())

	clk.Advance(time.Second)
	require.NoError(t, b.Execute(ctx, succeed))
	evs = c.events()
	require.Len(t, evs, 3)
	assert.Equal(t, Counts{}, evs[1].Counts, "nothing ran while Open")
	assert.Equal(t, Counts{Requests: 1, TotalSuccesses: 1, ConsecutiveSuccesses: 1}, evs[2].Counts, "the probe closed it")

	require.NoError(t, b.Open())
	evs = c.events()
	require.Len(t, evs, 4)
	assert.Equal(t, context.Background(), evs[3].Context)
}

func TestOnOpenOnCloseOnHalfOpenFilterTheirState(t *testing.T) {
	var opened, closed, half collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second}, Config{})
	b.OnOpen(opened.listen)
	b.OnClose(closed.listen)
	b.OnHalfOpen(half.listen)
	_ = b.Execute(t.Context(), fail)
	clk.Advance(time.Second)
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, []string{"closed→open"}, transitions(opened.events()))
	assert.Equal(t, []string{"open→half_open"}, transitions(half.events()))
	assert.Equal(t, []string{"half_open→closed"}, transitions(closed.events()))
	assert.Panics(t, func() { b.OnOpen(nil) })
	assert.Panics(t, func() { b.OnClose(nil) })
	assert.Panics(t, func() { b.OnHalfOpen(nil) })
}
