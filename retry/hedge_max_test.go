package retry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

// HEDGE_MAX bounds the hedges one call may start: with the default, one
// hedge and no more however long the race runs; with HEDGE_MAX=2, a second
// hedge on a third source once the delay passes again.
func TestHedgeMaxBoundsTheHedgesOfOneCall(t *testing.T) {
	three := func(max int) func(*config.ScopeSettings) {
		return func(sc *config.ScopeSettings) {
			sc.Sources = append(sc.Sources, config.Source{Name: "s3", Timeout: 10 * time.Second})
			sc.HedgeMax = max
		}
	}
	t.Run("default one", func(t *testing.T) {
		e := newHedgeEnv(t, three(config.DefaultHedgeMax))
		tr := newGatedChat("s1", "s2", "s3")
		done := streamInBackground(t, e, tr)
		require.Equal(t, "s1", <-tr.opened)
		e.timer.fire(t)
		require.Equal(t, "s2", <-tr.opened)
		tr.release("s1")
		s := <-done
		assert.Equal(t, "s1 s1 ", drain(t, s))
		require.NoError(t, s.Close())
		e.requireGivenBack(t)
		assert.Empty(t, tr.opened, "no second hedge was started")
		assert.Empty(t, e.timer.armed, "no second hedge was even timed")
		assert.Nil(t, tr.stream("s3"))
		assert.Equal(t, []string{"fired:s2<s1", "wasted:s2<s1"}, e.hedgeEvents())
	})
	t.Run("HEDGE_MAX=2", func(t *testing.T) {
		e := newHedgeEnv(t, three(2))
		tr := newGatedChat("s1", "s2", "s3")
		done := streamInBackground(t, e, tr)
		require.Equal(t, "s1", <-tr.opened)
		e.timer.fire(t)
		second := <-tr.opened
		e.timer.fire(t)
		third := <-tr.opened
		assert.ElementsMatch(t, []string{"s2", "s3"}, []string{second, third}, "each hedge on another source")
		tr.release(third)
		s := <-done
		assert.Equal(t, third, s.Source())
		assert.Equal(t, third+" "+third+" ", drain(t, s))
		require.NoError(t, s.Close())
		e.requireGivenBack(t)
		assert.Empty(t, e.timer.armed, "two hedges and no more")
		for _, loser := range []string{"s1", second} {
			assert.True(t, tr.stream(loser).closed.Load(), "%s is closed", loser)
			assert.Zero(t, tr.stream(loser).sent.Load(), "nothing of %s was delivered", loser)
			assert.Equal(t, []int64{0}, e.settles.of(loser), "%s is refunded in full", loser)
		}
		ev := e.hedgeEvents()
		assert.Contains(t, ev, "fired:"+second+"<s1")
		assert.Contains(t, ev, "fired:"+third+"<s1")
		assert.Contains(t, ev, "won:"+third+"<s1")
	})
}
