package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// An observer that panics on a hedge event leaves nothing of the race
// taken: the legs still running are cancelled and give themselves back,
// the hedge's ticket and the winner's stream are given back, and the panic
// reaches the caller.
func TestHedgeObserverPanicGivesBackEveryLeg(t *testing.T) {
	for _, ev := range []string{observe.HedgeFired, observe.HedgeWon} {
		t.Run(ev, func(t *testing.T) {
			e := newHedgeEnv(t, nil)
			e.panicOn.Store(ev)
			tr := newGatedChat("s1", "s2")
			chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
			panicked := make(chan any, 1)
			go func() {
				defer func() { panicked <- recover() }()
				s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
				if err == nil {
					_ = s.Close()
				}
			}()
			require.Equal(t, "s1", <-tr.opened)
			e.timer.fire(t)
			if ev == observe.HedgeWon {
				require.Equal(t, "s2", <-tr.opened)
				tr.release("s2")
			}
			assert.Equal(t, "observer bug", <-panicked)
			e.loop.WaitHedges()
			e.requireGivenBack(t)
			if ev == observe.HedgeWon {
				assert.True(t, tr.stream("s2").closed.Load(), "the winner's stream, which never reached the caller, is closed")
			}
			assert.True(t, tr.stream("s1").closed.Load(), "the primary's stream is closed")
			// The panic cut what the race had not decided: abandoned, as
			// the call was. A primary the won hedge beat lost to it.
			want := map[string]string{"s1": observe.OutcomeAbandoned}
			if ev == observe.HedgeWon {
				want = map[string]string{"s1": observe.OutcomeHedgeLost, "s2": observe.OutcomeAbandoned}
			}
			assert.Equal(t, want, e.outcomes())
		})
	}
}
