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
			assert.Equal(t, m.Successes+m.Failures+m.Excluded+m.Cancelled+m.Rejections+m.GateErrors, m.TotalCalls)

			// The lease was given back: the next caller probes at once,
			// long before the hour-long ProbeTTL.
			require.NoError(t, b.Execute(t.Context(), succeed))
			assert.Equal(t, gate.Closed, b.State())
		})
	}
}
