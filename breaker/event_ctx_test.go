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
// carries that call's context without its cancellation. A call whose ctx
// is done before it starts is not admitted (the gate is not asked), so the
// case left is a recorded outcome: the caller gave up during its probe, and
// the Record's answer shows a change another process made meanwhile.
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
	var errs []error // each event's ctx.Err() as the listener saw it
	b.OnStateChange(func(ev breaker.StateChange) {
		mu.Lock()
		evs = append(evs, ev)
		errs = append(errs, ev.Context.Err())
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), eventCtxKey{}, "caller"))
	defer cancel()

	// Another process trips the shared gate; b's probe, once the cooldown
	// passed, sees HalfOpen. While it runs a Fatal of the other process opens
	// the gate again, and b's caller gives up: b's Record shows Open.
	require.ErrorIs(t, other.Execute(t.Context(), fail503), errUpstream)
	clk.Advance(time.Second)
	require.ErrorIs(t, b.Execute(ctx, func(ctx context.Context) error {
		// A 401 of a call the other process admitted earlier: Fatal opens
		// the record whenever it comes.
		_, err := g.Record(t.Context(), "shared", gate.Decision{Allowed: true, State: gate.Closed}, gate.Fatal)
		require.NoError(t, err)
		cancel()
		return ctx.Err()
	}), context.Canceled)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, evs, 2)
	for i, want := range []gate.State{gate.HalfOpen, gate.Open} {
		assert.Equal(t, want, evs[i].To)
		assert.Equal(t, "caller", evs[i].Context.Value(eventCtxKey{}), "the caller's context")
		assert.NoError(t, errs[i], "without its cancellation (change to %v)", want)
	}
}
