package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// spentBudgetWhileTheScopeDelivers runs one call on a single source under
// CIRCUIT_OPEN=wait whose own stall budget is spent (a 429 held it off for
// the whole window) while another call of its scope has just delivered, so
// it is not stalled for another window: its second attempt fails (the
// breaker opens for a cooldown) and its third succeeds. It returns the
// call's sleeps.
func spentBudgetWhileTheScopeDelivers(t *testing.T) (*env, []time.Duration) {
	t.Helper()
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Rand = func() float64 { return 0.5 } // jitter 3/4 poll, backoff half its ceiling
		c.Scope.CircuitOpen = config.ModeWait
	})
	jitter := poll * 3 / 4
	n := 0
	v, err := retry.Run(context.Background(), e.loop, 1, func(context.Context, config.Source) (string, transport.Usage, error) {
		n++
		switch n {
		case 1:
			// Held off until exactly the end of the stall window.
			return "", transport.Usage{}, httpErr(429, window-jitter, "slow down")
		case 2:
			e.loop.Deliveries().Mark(e.clk.Now()) // another call of the scope delivered just now
			return "", transport.Usage{}, errBoom
		}
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "ok", v)
	require.Equal(t, 3, n)
	e.requireNothingHeld(t, "only")
	return e, e.sleeper.taken()
}

// TestWaitPastTheOwnBudgetWakesOncePerCooldownWhileTheScopeDelivers: a call
// that cannot be stalled before the window after its scope's last delivery
// sleeps to the end of the cooldown in one nap, not one poll interval at a
// time.
func TestWaitPastTheOwnBudgetWakesOncePerCooldownWhileTheScopeDelivers(t *testing.T) {
	e, naps := spentBudgetWhileTheScopeDelivers(t)
	require.GreaterOrEqual(t, len(naps), 3)
	assert.Equal(t, 3, len(naps), "the 429's wait, the backoff, one nap to the cooldown's end")
	assert.GreaterOrEqual(t, naps[len(naps)-1], cooldown-time.Second, "one nap covers the cooldown")
	assert.LessOrEqual(t, e.gate.tryEnter.Load(), int64(4))
	assert.Equal(t, gate.Closed, e.snapshot(t, "only").State)
}

// TestBackoffPastTheOwnBudgetIsNotCutWhileTheScopeDelivers: a failed attempt
// is followed by its full backoff when the call cannot be stalled before it
// ends, even though the call's own stall budget is spent.
func TestBackoffPastTheOwnBudgetIsNotCutWhileTheScopeDelivers(t *testing.T) {
	_, naps := spentBudgetWhileTheScopeDelivers(t)
	require.GreaterOrEqual(t, len(naps), 2)
	assert.Equal(t, window, naps[0], "the 429's Retry-After plus the jitter")
	assert.Equal(t, 100*time.Millisecond, naps[1], "full jitter: 0.5 × the 200 ms base")
}
