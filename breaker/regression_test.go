package breaker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// A listener that panics on open → half_open is called after the gate
// granted a probe lease: the lease must still be given back, or the breaker
// rejects everyone until the lease expires.
func TestListenerPanicOnHalfOpenGivesBackTheProbe(t *testing.T) {
	for _, via := range []string{"Execute", "Allow"} {
		t.Run(via, func(t *testing.T) {
			b, clk, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: time.Hour}, Config{})
			b.OnStateChange(func(ev StateChange) {
				if ev.To == gate.HalfOpen {
					panic("listener bug")
				}
			})
			trip(t, b, 1)
			clk.Advance(time.Second)
			ran := false
			require.PanicsWithValue(t, "listener bug", func() {
				if via == "Execute" {
					_ = b.Execute(t.Context(), func(context.Context) error { ran = true; return nil })
					return
				}
				tok, _ := b.Allow(t.Context())
				tok.Done(nil)
			})
			assert.False(t, ran, "the call must not run once its admission panicked")
			assert.Equal(t, []gate.Outcome{gate.Failure, gate.Released}, l.recorded())
			m := b.Metrics()
			assert.Equal(t, uint64(1), m.Cancelled, "the admitted call is in Metrics")
			assert.Equal(t, m.Successes+m.Failures+m.Excluded+m.Cancelled+m.Rejections+m.GateErrors+m.Stale, m.TotalCalls)

			// The lease was given back: the next caller probes at once,
			// long before the hour-long ProbeTTL.
			require.NoError(t, b.Execute(t.Context(), succeed))
			assert.Equal(t, gate.Closed, b.State())
		})
	}
}

// Outcomes the gate ignores as stale (admitted before a trip, finished after
// the breaker closed again) must not move the local counts either.
func TestStaleOutcomesAreNotCountedInMetrics(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second}, Config{})
	old1, err := b.Allow(t.Context())
	require.NoError(t, err)
	old2, err := b.Allow(t.Context())
	require.NoError(t, err)
	trip(t, b, 2)
	clk.Advance(time.Second)
	require.NoError(t, b.Execute(t.Context(), succeed))
	require.Equal(t, gate.Closed, b.State())

	old1.Done(errBoom)
	old2.Done(errBoom)
	m := b.Metrics()
	assert.Equal(t, gate.Closed, m.State)
	assert.Equal(t, uint64(2), m.Failures, "only the two failures that tripped")
	assert.Equal(t, uint64(0), m.ConsecutiveFailures)
	assert.Equal(t, uint64(1), m.ConsecutiveSuccesses)
	assert.Equal(t, uint64(2), m.Stale)
	assert.Equal(t, uint64(5), m.TotalCalls)
}
