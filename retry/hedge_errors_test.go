package retry_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// hedged turns hedging on for a scope: a delay no test fires, so every
// attempt runs as a race of one.
func hedged() envOpt {
	return withScope(func(s *config.ScopeSettings) { s.HedgeAfter = time.Hour })
}

// An attempt that runs as a hedged race is judged like one that runs alone:
// an SDK's 429 with a Retry-After holds its source off and the call fails
// over at once, without a backoff.
func TestHedgedSDKThrottleWithRetryAfterHoldsTheSourceOffAndFailsOver(t *testing.T) {
	for _, on := range []bool{false, true} {
		var opts []envOpt
		if on {
			opts = append(opts, hedged())
		}
		e := newEnv(t, opts...)
		var calls []string
		v, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
			calls = append(calls, src.Name)
			if src.Name == "s1" {
				return "", transport.Usage{}, newSDKError(429, http.Header{"Retry-After": {"2"}}, "")
			}
			return "ok", transport.Usage{}, nil
		})
		require.NoError(t, err, "hedging %v", on)
		assert.Equal(t, "ok", v)
		assert.Equal(t, []string{"s1", "s2"}, calls, "hedging %v", on)
		assert.Empty(t, e.sleeper.taken(), "hedging %v: the Retry-After is a hold-off, not a backoff", on)
		assert.Equal(t, 2*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()), "hedging %v", on)
		e.requireNothingHeld(t)
	}
}

// The error a hedged call ends with names the scope and source it came
// from, as it does when the scope does not hedge.
func TestHedgedCallErrorNamesScopeAndSource(t *testing.T) {
	for _, on := range []bool{false, true} {
		var opts []envOpt
		if on {
			opts = append(opts, hedged())
		}
		e := newEnv(t, opts...)
		_, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
			return "", transport.Usage{}, httpErr(404, 0, "no such model")
		})
		var he *errs.HTTPError
		require.ErrorAs(t, err, &he, "hedging %v", on)
		assert.Equal(t, "CHAT", he.Scope, "hedging %v", on)
		assert.Equal(t, "s1", he.Source, "hedging %v", on)
		e.requireNothingHeld(t)
	}
}

// A hedge goes through the other source's quota: with its in-flight slots
// all taken, no hedge starts, nothing is over-admitted and the hedge costs
// the budget nothing.
func TestHedgeRespectsTheOtherSourcesMaxInFlight(t *testing.T) {
	e := newHedgeEnv(t, nil)
	ctx := context.Background()
	var held []gate.Permit
	for range 8 {
		p, d, err := e.quota.Acquire(ctx, "s2", 0)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		held = append(held, p)
	}
	tr := newGatedChat("s1", "s2")
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	done := make(chan *retry.Stream, 1)
	go func() {
		s, err := chat.Stream(ctx, transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		assert.NoError(t, err)
		done <- s
	}()
	<-tr.opened
	e.timer.fire(t)
	require.Eventually(t, func() bool { return len(e.hedgeEvents()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"skipped_no_source:<s1"}, e.hedgeEvents())
	assert.Equal(t, 8, e.quota.InFlight("s2"), "no ninth slot for the hedge")
	tr.release("s1")
	s := <-done
	assert.Equal(t, "s1 s1 ", drain(t, s))
	require.NoError(t, s.Close())
	b, ok := e.loop.HedgeBudget()
	require.True(t, ok)
	assert.InDelta(t, 10, b, 1e-9, "a hedge that could not start costs nothing")
	for _, p := range held {
		require.NoError(t, e.quota.Release(ctx, p))
	}
	e.requireGivenBack(t)
}

// Hedges count toward MAX_ATTEMPTS: a call allowed one attempt never arms a
// hedge.
func TestHedgeNeverExceedsMaxAttempts(t *testing.T) {
	e := newHedgeEnv(t, func(sc *config.ScopeSettings) { sc.MaxAttempts = 1 })
	v, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		return "ok@" + src.Name, transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok@s1", v)
	assert.Empty(t, e.timer.armed, "no hedge delay armed: the one attempt allowed is taken")
	e.requireGivenBack(t)
}

// Both attempts of a race that failed are demoted for the rest of the call:
// the next round goes to the healthy third source, not back to the hedge's
// source that just failed.
func TestHedgeRaceDemotesEverySourceThatFailedInIt(t *testing.T) {
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 5, Cooldown: cooldown, ProbeTTL: 10 * cooldown},
		memory.WithClock(clk))
	require.NoError(t, err)
	timer := newManualTimer()
	sleeper := &fakeSleep{clk: clk}
	var srcs []config.Source
	for i, n := range []string{"s1", "s2", "s3"} {
		srcs = append(srcs, config.Source{Name: n, Timeout: 10 * time.Second, Priority: i})
	}
	loop, err := retry.New(retry.Config{
		Scope:   config.ScopeSettings{Name: "CHAT", PollInterval: poll, StallWindow: window, HedgeAfter: time.Second, Sources: srcs},
		Breaker: b, Clock: clk, Sleep: sleeper.sleep, Rand: func() float64 { return 0 },
		Logger: slog.New(slog.DiscardHandler), HedgeTimer: timer.timer,
	})
	require.NoError(t, err)
	gates := map[string]chan struct{}{"s1": make(chan struct{}), "s2": make(chan struct{})}
	started := make(chan string, 8)
	var mu sync.Mutex
	var calls []string
	fn := func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		mu.Lock()
		calls = append(calls, src.Name)
		mu.Unlock()
		started <- src.Name
		if g, ok := gates[src.Name]; ok {
			select {
			case <-g:
			case <-ctx.Done():
				return "", transport.Usage{}, ctx.Err()
			}
			return "", transport.Usage{}, httpErr(503, 0, "unavailable")
		}
		return "ok@" + src.Name, transport.Usage{}, nil
	}
	done := make(chan string, 1)
	go func() {
		v, err := retry.Run(context.Background(), loop, 0, fn)
		assert.NoError(t, err)
		done <- v
	}()
	require.Equal(t, "s1", <-started)
	timer.fire(t)
	require.Equal(t, "s2", <-started)
	close(gates["s1"]) // the primary fails while the hedge runs
	require.Eventually(t, func() bool {
		s, err := b.Snapshot(context.Background(), "s1")
		return err == nil && s.ConsecutiveFailures == 1
	}, 5*time.Second, time.Millisecond)
	close(gates["s2"]) // then the hedge fails: the race is lost
	// The next round arms a new timer for its attempt, which is never fired.
	assert.Equal(t, "ok@s3", <-done)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"s1", "s2", "s3"}, calls)
}
