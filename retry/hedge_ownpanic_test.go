package retry_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
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
				done := hedgedStream(t, chat, tr, func() { e.timer.fire(t) })
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

// advertisedPanic is an observer that panics on the first advertised rate
// limit it hears of.
type advertisedPanic struct {
	observe.Nop
	armed atomic.Bool
}

func (o *advertisedPanic) ObserveAdvertised(observe.Advertised) {
	if o.armed.CompareAndSwap(true, false) {
		panic("observer bug, key sk-secret-2")
	}
}

// advertisingChat is a gatedChat whose upstreams advertise their limits.
type advertisingChat struct{ *gatedChat }

func (a advertisingChat) ChatStream(ctx context.Context, src transport.Source, req transport.ChatRequest) (transport.ChatStream, error) {
	transport.ObserveResponse(ctx, 200, http.Header{
		"X-Ratelimit-Limit-Requests": {"100"}, "X-Ratelimit-Remaining-Requests": {"99"}, "X-Ratelimit-Reset-Requests": {"1s"},
	})
	return a.gatedChat.ChatStream(ctx, src, req)
}

// A hedged attempt hands its upstream's advertised limits to the admission
// on its own goroutine, as it delivers: an observer that panics on them does
// not end the process. The panic is logged without the key, and the attempt
// delivers as it would have.
func TestHedgeLegAdvertisedObserverPanicIsRecovered(t *testing.T) {
	testutil.InChild(t, func(t *testing.T) {
		var log lockedLog
		obs := &advertisedPanic{}
		timer := newManualTimer()
		b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, ProbeTTL: 10 * cooldown})
		require.NoError(t, err)
		l, err := retry.New(retry.Config{
			Scope: config.ScopeSettings{Name: "CHAT", PollInterval: poll, StallWindow: window, HedgeAfter: time.Second,
				Sources: []config.Source{{Name: "s1", Timeout: 10 * time.Second},
					{Name: "s2", Timeout: 10 * time.Second, APIKey: config.NewSecret("sk-secret-2")}}},
			Breaker: b, Rand: func() float64 { return 0 }, HedgeTimer: timer.timer,
			Logger: slog.New(slog.NewTextHandler(&log, nil)), Observer: obs,
			Advertising: admission.Advertising{Budget: memory.NewBudget()},
		})
		require.NoError(t, err)
		tr := newGatedChat("s1", "s2")
		chat := retry.NewChat(l, advertisingChat{tr}, retry.ChatOptions{})
		done := hedgedStream(t, chat, tr, func() { timer.fire(t) })
		obs.armed.Store(true)
		tr.release("s2")
		r := <-done
		require.NoError(t, r.err)
		assert.Equal(t, "s2", r.s.Source())
		require.NoError(t, r.s.Close())
		l.WaitHedges()
		assert.False(t, obs.armed.Load(), "the observer heard of the limits")
		assert.Contains(t, log.String(), "an observer panicked on a goroutine of pgw's own")
		assert.Contains(t, log.String(), "source=s2")
		assert.NotContains(t, log.String(), "sk-secret-2", "the panic is logged redacted")
	})
}
