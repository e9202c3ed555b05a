package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// A hedged attempt that lost its race gives itself back on its own
// goroutine, where no caller can recover a panic: an observer that panics
// there — on the lost attempt's record, or on a breaker state change its
// give-back shows — does not end the process. The panic is logged without
// the source's key, the attempt is given back all the same, and the call
// the race won is unharmed. Each scenario runs in a child process: before
// the fix the panic killed it.
func TestHedgeLoserObserverPanicIsRecovered(t *testing.T) {
	for _, c := range []struct {
		name  string
		arm   func(e *hedgeEnv)
		force bool // an operator forces s1 open while it runs: its give-back shows the change
	}{
		{name: "record", arm: func(e *hedgeEnv) { e.panicRecord.Store(observe.OutcomeHedgeLost) }},
		{name: "state_change", arm: func(e *hedgeEnv) { e.panicState.Store(true) }, force: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.InChild(t, func(t *testing.T) {
				e := newHedgeEnv(t, func(sc *config.ScopeSettings) { sc.Sources[0].APIKey = config.NewSecret("sk-secret-1") })
				tr := newGatedChat("s1", "s2")
				chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
				type result struct {
					s   *retry.Stream
					err error
				}
				done := make(chan result, 1)
				go func() {
					s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
					done <- result{s, err}
				}()
				require.Equal(t, "s1", <-tr.opened)
				e.timer.fire(t)
				require.Equal(t, "s2", <-tr.opened)
				if c.force {
					require.NoError(t, e.breaker.Force(context.Background(), "s1", gate.ForceOpen))
				}
				c.arm(e)
				tr.release("s2") // the hedge wins; s1 is cancelled and gives itself back
				r := <-done
				require.NoError(t, r.err)
				assert.Equal(t, "s2", r.s.Source())
				require.NoError(t, r.s.Close())
				e.loop.WaitHedges()
				e.requireGivenBack(t)
				log := e.log.String()
				assert.Contains(t, log, "an observer panicked on a goroutine of pgw's own")
				assert.Contains(t, log, "source=s1")
				assert.Contains(t, log, "observer bug")
				assert.NotContains(t, log, "sk-secret-1", "the panic is logged redacted")
			})
		})
	}
}
