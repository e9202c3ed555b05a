package breaker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

type eventCtxKey struct{}

// A StateChange observed by a call whose caller had already given up
// carries that call's context without its cancellation, whichever answer of
// the gate showed the change: an admission, a rejection or a recorded
// outcome.
func TestStateChangeContextIsNeverCancelled(t *testing.T) {
	clk := contracttest.NewFakeClock()
	g, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, CooldownMultiplier: 1}, memory.WithClock(clk))
	require.NoError(t, err)
	other, err := breaker.New("shared", breaker.Config{Gate: g, Logger: quiet()})
	require.NoError(t, err)
	b, err := breaker.New("shared", breaker.Config{Gate: g, Logger: quiet()})
	require.NoError(t, err)
	var mu sync.Mutex
	var evs []breaker.StateChange
	b.OnStateChange(func(ev breaker.StateChange) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), eventCtxKey{}, "caller"))
	cancel()

	// Rejection: another process tripped the shared gate.
	require.ErrorIs(t, other.Execute(t.Context(), fail503), errUpstream)
	require.ErrorIs(t, b.Execute(ctx, succeedFn), breaker.ErrOpen)
	// Admission: the cooldown passed; this call takes the probe.
	clk.Advance(time.Second)
	require.ErrorIs(t, b.Execute(ctx, func(ctx context.Context) error { return ctx.Err() }), context.Canceled)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, evs, 2)
	for i, want := range []gate.State{gate.Open, gate.HalfOpen} {
		assert.Equal(t, want, evs[i].To)
		assert.Equal(t, "caller", evs[i].Context.Value(eventCtxKey{}), "the caller's context")
		assert.NoError(t, evs[i].Context.Err(), "without its cancellation (change to %v)", want)
	}
}
