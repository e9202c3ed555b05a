package contracttest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// BudgetFactory builds a fresh advertised-budget gate and the Clock that
// drives its time. RunBudget needs an exact clock (Slack 0): a fake clock,
// or miniredis's.
type BudgetFactory func(t *testing.T) (gate.BudgetGate, Clock)

// requests advertises a request window and nothing about tokens.
func requests(limit, remaining int64, reset time.Duration) gate.Advertised {
	return gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: limit, Remaining: remaining, Reset: reset},
		Tokens:   gate.UnknownWindow,
	}
}

// RunBudget runs the contract of gate.BudgetGate: an unknown source is not
// limited; admissions take from the advertised remaining and are rejected
// with the time to the reset once it is spent; at the reset the budget is
// the limit again, with an unknown reset (RetryAfter 0) until an answer
// tells the next; a refresh never raises the budget within a window; a late
// answer of the window just ended is not taken; the first answer is taken
// less the calls admitted before anything was known; tokens count like requests,
// a request larger than the window waiting for a whole window; a window spent
// after its reset with no answer since does not hold its source back
// forever; concurrent takes never admit more than is left.
func RunBudget(t *testing.T, newGate BudgetFactory) {
	t.Helper()
	nonce := fmt.Sprintf("b%x", time.Now().UnixNano()&0xffffff)
	h := func(t *testing.T) (gate.BudgetGate, Clock, string) {
		g, clk := newGate(t)
		require.Zero(t, clk.Slack(), "RunBudget needs an exact clock")
		return g, clk, nonce + "-" + t.Name()
	}
	take := func(t *testing.T, g gate.BudgetGate, src string, est int64) gate.BudgetDecision {
		t.Helper()
		d, err := g.Take(t.Context(), src, est)
		require.NoError(t, err)
		return d
	}
	refresh := func(t *testing.T, g gate.BudgetGate, src string, a gate.Advertised) {
		t.Helper()
		require.NoError(t, g.Refresh(t.Context(), src, a))
	}

	t.Run("Budget/an unknown source is not limited", func(t *testing.T) {
		g, _, src := h(t)
		for range 100 {
			require.True(t, take(t, g, src, 1_000_000).Allowed)
		}
		_, ok, err := g.Read(t.Context(), src)
		require.NoError(t, err)
		assert.False(t, ok)
		refresh(t, g, src, gate.Advertised{Requests: gate.UnknownWindow, Tokens: gate.UnknownWindow})
		assert.True(t, take(t, g, src, 1).Allowed, "an answer without figures limits nothing")
	})

	t.Run("Budget/spent until the reset, then the limit again", func(t *testing.T) {
		g, clk, src := h(t)
		refresh(t, g, src, requests(5, 2, 10*time.Second))
		require.True(t, take(t, g, src, 0).Allowed)
		require.True(t, take(t, g, src, 0).Allowed)
		clk.Advance(4 * time.Second)
		d := take(t, g, src, 0)
		assert.False(t, d.Allowed)
		assert.Equal(t, 6*time.Second, d.RetryAfter, "the time to the advertised reset")
		assert.Equal(t, gate.LimitAdvertisedRequests, d.Limit)
		a, ok, err := g.Read(t.Context(), src)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, gate.AdvertisedWindow{Limit: 5, Remaining: 0, Reset: 6 * time.Second}, a.Requests)

		clk.Advance(6 * time.Second)
		for i := range 5 {
			require.True(t, take(t, g, src, 0).Allowed, "take %d of the limit after the reset", i+1)
		}
		d = take(t, g, src, 0)
		assert.False(t, d.Allowed, "no more than the limit until an answer says more: no herd at the reset")
		assert.Zero(t, d.RetryAfter, "the next reset is not known")
	})

	t.Run("Budget/a refresh never raises the budget within a window", func(t *testing.T) {
		g, clk, src := h(t)
		refresh(t, g, src, requests(10, 5, 10*time.Second))
		for range 3 {
			require.True(t, take(t, g, src, 0).Allowed)
		}
		clk.Advance(time.Second)
		refresh(t, g, src, requests(10, 4, 9*time.Second)) // counts 1 of our 3: 2 in flight
		require.True(t, take(t, g, src, 0).Allowed)
		require.True(t, take(t, g, src, 0).Allowed)
		assert.False(t, take(t, g, src, 0).Allowed, "the budget is min(ours 2, advertised 4)")
		refresh(t, g, src, requests(10, 1, 9*time.Second))
		assert.False(t, take(t, g, src, 0).Allowed)
	})

	t.Run("Budget/a late answer of the ended window is not taken", func(t *testing.T) {
		g, clk, src := h(t)
		refresh(t, g, src, requests(20, 0, 3*time.Second))
		clk.Advance(3 * time.Second)
		require.True(t, take(t, g, src, 0).Allowed, "the window reset: 20 again")
		refresh(t, g, src, requests(20, 0, 10*time.Millisecond)) // sent before the reset, received after
		for i := range 19 {
			require.True(t, take(t, g, src, 0).Allowed, "take %d: the late answer did not empty the new window", i+2)
		}
		assert.False(t, take(t, g, src, 0).Allowed)
		refresh(t, g, src, requests(20, 15, 2900*time.Millisecond)) // an answer of the new window
		a, _, err := g.Read(t.Context(), src)
		require.NoError(t, err)
		assert.Equal(t, gate.AdvertisedWindow{Limit: 20, Remaining: 0, Reset: 2900 * time.Millisecond}, a.Requests,
			"taken: its reset is a whole window later; the budget stays the smaller")
	})

	t.Run("Budget/the first answer is less the calls admitted blind", func(t *testing.T) {
		g, _, src := h(t)
		for range 5 {
			require.True(t, take(t, g, src, 0).Allowed, "nothing known yet")
		}
		refresh(t, g, src, requests(20, 19, 3*time.Second)) // counts its own call; 4 may be in flight
		a, ok, err := g.Read(t.Context(), src)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, int64(15), a.Requests.Remaining)
		refresh(t, g, src, requests(20, 15, 3*time.Second))
		a, _, err = g.Read(t.Context(), src)
		require.NoError(t, err)
		assert.Equal(t, int64(15), a.Requests.Remaining, "counted once only")
	})

	t.Run("Budget/tokens", func(t *testing.T) {
		g, clk, src := h(t)
		refresh(t, g, src, gate.Advertised{Requests: gate.UnknownWindow,
			Tokens: gate.AdvertisedWindow{Limit: 1000, Remaining: 100, Reset: 5 * time.Second}})
		d := take(t, g, src, 150)
		assert.False(t, d.Allowed)
		assert.Equal(t, gate.LimitAdvertisedTokens, d.Limit)
		assert.Equal(t, 5*time.Second, d.RetryAfter)
		require.True(t, take(t, g, src, 100).Allowed)
		assert.False(t, take(t, g, src, 1).Allowed)
		clk.Advance(5 * time.Second)
		require.True(t, take(t, g, src, 5000).Allowed, "a request above the limit waits for a whole window, no longer")
		assert.False(t, take(t, g, src, 1).Allowed)
	})

	t.Run("Budget/a window spent with no answer since its reset is not held forever", func(t *testing.T) {
		g, clk, src := h(t)
		refresh(t, g, src, requests(3, 3, 2*time.Second))
		clk.Advance(2 * time.Second) // the reset: 3 again, the next reset unknown
		for i := range 3 {
			// Calls that bring no answer back (timeouts, refused
			// connections): nothing refreshes the budget.
			require.True(t, take(t, g, src, 0).Allowed, "take %d of the limit after the reset", i+1)
		}
		d := take(t, g, src, 0)
		require.False(t, d.Allowed)
		require.Zero(t, d.RetryAfter, "the next reset is not known")
		clk.Advance(10 * time.Second)
		assert.True(t, take(t, g, src, 0).Allowed,
			"a window and more after the last take, the budget no longer holds the source back")
	})

	t.Run("Budget/concurrent takes never exceed what is left", func(t *testing.T) {
		g, _, src := h(t)
		refresh(t, g, src, gate.Advertised{
			Requests: gate.AdvertisedWindow{Limit: 100, Remaining: 20, Reset: 30 * time.Second},
			Tokens:   gate.AdvertisedWindow{Limit: 10_000, Remaining: 1_500, Reset: 30 * time.Second},
		})
		const callers = 48
		var (
			wg              sync.WaitGroup
			allowed, failed atomic.Int64
			rejectedBy      sync.Map // Limit → true
		)
		for range callers {
			wg.Go(func() {
				d, err := g.Take(t.Context(), src, 100)
				switch {
				case err != nil:
					failed.Add(1)
				case d.Allowed:
					allowed.Add(1)
				default:
					rejectedBy.Store(d.Limit, true)
				}
			})
		}
		wg.Wait()
		require.Zero(t, failed.Load())
		assert.Equal(t, int64(15), allowed.Load(), "1,500 tokens at 100 a call, fewer than the 20 requests left")
		_, byTokens := rejectedBy.Load(gate.LimitAdvertisedTokens)
		assert.True(t, byTokens, "the rest are rejected by the token window")
		a, ok, err := g.Read(t.Context(), src)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, int64(5), a.Requests.Remaining, "each admission took one request")
		assert.Equal(t, int64(0), a.Tokens.Remaining, "and its tokens")
	})
}
