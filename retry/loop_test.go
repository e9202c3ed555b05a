package retry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

func TestRunReturnsTheFirstSuccessAndSettlesItsTokens(t *testing.T) {
	e := newEnv(t)
	s := &script{}
	v, err := retry.Run(context.Background(), e.loop, 100, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@s1", v)
	assert.Equal(t, []string{"s1"}, s.seen())
	e.requireNothingHeld(t)
	last, ok := e.loop.Deliveries().Last()
	require.True(t, ok, "a success is a delivery of the scope")
	assert.True(t, e.clk.Now().Equal(last))
}

func TestFailureBacksOffAndFailsOver(t *testing.T) {
	e := newEnv(t, func(c *retry.Config) { c.Rand = func() float64 { return 0.25 } }) // s1 first
	s := &script{errs: map[string][]error{"s1": {httpErr(503, 0, "overloaded")}}}
	v, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, []string{"s1", "s2"}, s.seen(), "fails over to the other source")
	assert.Equal(t, "ok@s2", v)
	assert.Equal(t, []time.Duration{50 * time.Millisecond}, e.sleeper.taken(), "full jitter: r × base")
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State, "a 5xx is a breaker failure")
	e.requireNothingHeld(t)
}

func TestBackoffFollowsTheFailureCount(t *testing.T) {
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Rand = func() float64 { return 0.5 }
		c.Breaker = gate.Noop{} // never opens: every round retries the same source
		c.Scope.MaxAttempts = 5
	})
	s := &script{errs: map[string][]error{"only": {errBoom, errBoom, errBoom, errBoom}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond},
		e.sleeper.taken())
}

func TestBackoffNeverCarriesACallPastItsStallBudget(t *testing.T) {
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Rand = func() float64 { return 0.999 }
		c.Breaker = gate.Noop{}
		c.Backoff = retry.Backoff{Base: time.Second, Max: time.Minute}
		c.Scope.MaxAttempts = 10
		c.Scope.StallWindow = 1500 * time.Millisecond
	})
	s := &script{errs: map[string][]error{"only": {errBoom, errBoom, errBoom, errBoom}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	var ex *errs.AllSourcesExhausted
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, errs.ReasonStalled, ex.Reason)
	assert.Equal(t, map[string]string{"only": "failure"}, ex.Reasons, "Reasons is filled when attempts, not rejections, stalled the call")
	assert.ErrorIs(t, err, errBoom, "the last attempt's error is reachable")
	naps := e.sleeper.taken()
	require.Len(t, naps, 2, "a ~1s backoff, then one clamped to the budget")
	assert.Equal(t, 1501*time.Millisecond, naps[0]+naps[1], "stall budget plus the 1ms that makes it spent")
	assert.Len(t, s.seen(), 2)
}

func TestMaxAttemptsSpentIsGatewayUnavailableWrappingTheLastError(t *testing.T) {
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Breaker = gate.Noop{}
		c.Scope.MaxAttempts = 3
	})
	last := httpErr(502, 0, "bad gateway #3")
	s := &script{errs: map[string][]error{"only": {errBoom, errBoom, last}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	var gu *errs.GatewayUnavailableError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, 3, gu.Attempts)
	assert.Equal(t, "CHAT", gu.Scope)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 502, he.StatusCode)
	assert.Equal(t, "bad gateway #3", he.Message)
	assert.Equal(t, "CHAT", he.Scope, "the error that ends the call names its scope")
	assert.Equal(t, "only", he.Source, "and its source")
	assert.Contains(t, err.Error(), "upstream http 502 from scope CHAT, source only: bad gateway #3")
	assert.Empty(t, last.(*errs.HTTPError).Scope, "the attempt's own error, which may be shared, is not modified")
	assert.Len(t, e.sleeper.taken(), 2, "no backoff after the last attempt")
}

func TestThrottleHoldsTheSourceOffUntilRetryAfterAndIsNotABreakerFailure(t *testing.T) {
	e := newEnv(t)
	s := &script{errs: map[string][]error{"s1": {httpErr(429, 20*time.Second, "slow down")}}}
	v, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@s2", v, "fails over at once, no backoff")
	assert.Empty(t, e.sleeper.taken())
	assert.Equal(t, gate.Closed, e.snapshot(t, "s1").State, "a 429 is not a breaker failure")
	assert.Zero(t, e.snapshot(t, "s1").ConsecutiveFailures)
	assert.Equal(t, 1, e.pacer.get(e.pacer.throttled, "s1"), "the pacer is told to shrink")
	assert.Equal(t, 20*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()))
	e.requireNothingHeld(t)
}

// memoAtRecord notes, when the ticket of source gives its breaker decision
// back, how long the memo then holds the source off.
type memoAtRecord struct {
	gate.ProviderGate
	e      *env
	source string
	seen   []time.Duration
}

func (g *memoAtRecord) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if s == g.source {
		g.seen = append(g.seen, g.e.loop.Admission().Memo().Remaining(s, g.e.clk.Now()))
	}
	return g.ProviderGate.Record(ctx, s, d, o)
}

// TestThrottleHoldsTheSourceOffBeforeTheTicketIsGivenBack: the upstream's
// Retry-After reaches the memo before Done spends its round trips on the
// gates, so no other round of the process admits the source in between.
func TestThrottleHoldsTheSourceOffBeforeTheTicketIsGivenBack(t *testing.T) {
	g := &memoAtRecord{source: "s1"}
	e := newEnv(t, func(c *retry.Config) { g.ProviderGate = c.Breaker; c.Breaker = g })
	g.e = e
	s := &script{errs: map[string][]error{"s1": {httpErr(429, 20*time.Second, "slow down")}}}
	v, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@s2", v)
	assert.Equal(t, []time.Duration{20 * time.Second}, g.seen, "held off when s1's decision was given back")
	e.requireNothingHeld(t)
}

func TestThrottleRetryAfterNeverShortensARunningCooldown(t *testing.T) {
	e := newEnv(t, func(c *retry.Config) { c.Scope.QuotaFull = config.ModeFailFast })
	e.loop.Admission().HoldOff("s2", time.Minute)
	s := &script{errs: map[string][]error{"s1": {httpErr(429, 5*time.Second, "slow down")}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	var ase *errs.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "s1 held off 5s, s2 for a minute: a throttle, QUOTA_FULL=fail_fast")
	assert.Equal(t, map[string]string{"s1": "retry_after", "s2": "retry_after"}, ase.Reasons)
	assert.Equal(t, 5*time.Second, ase.RetryAfter, "the earliest certain wait")
	e.loop.Admission().HoldOff("s1", time.Second) // a later, shorter Retry-After
	assert.Equal(t, 5*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()))
	assert.Equal(t, time.Minute, e.loop.Admission().Memo().Remaining("s2", e.clk.Now()))
}

func TestFatalOutcomeOpensTheSourceAndTheCallFailsOver(t *testing.T) {
	for _, fatal := range []error{
		httpErr(401, 0, "invalid api key"),
		httpErr(403, 0, "forbidden"),
		httpErr(429, 0, "You exceeded your current quota (insufficient_quota)"),
	} {
		t.Run(fatal.Error(), func(t *testing.T) {
			e := newEnv(t)
			s := &script{errs: map[string][]error{"s1": {fatal}}}
			v, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
			require.NoError(t, err)
			assert.Equal(t, "ok@s2", v)
			assert.Empty(t, e.sleeper.taken(), "no backoff: the breaker already keeps s1 out")
			assert.Equal(t, gate.Open, e.snapshot(t, "s1").State)
			e.requireNothingHeld(t)
		})
	}
}

func TestSingleSourceBadKeyFailsFastWithTheUnauthorizedErrorReachable(t *testing.T) {
	e := newEnv(t, names("only"))
	s := &script{errs: map[string][]error{"only": {httpErr(401, 0, "invalid api key")}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	var coe *errs.CircuitOpenError
	require.ErrorAs(t, err, &coe)
	assert.Equal(t, cooldown, coe.RetryAfter)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he, "the 401 that opened the breaker is reachable")
	assert.Equal(t, 401, he.StatusCode)
}

func TestCallerErrorIsReturnedAtOnceWithoutRetry(t *testing.T) {
	for _, status := range []int{400, 404, 413, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := newEnv(t)
			s := &script{errs: map[string][]error{"s1": {httpErr(status, 0, "bad request")}}}
			_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
			var he *errs.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, status, he.StatusCode)
			assert.Equal(t, []string{"s1"}, s.seen(), "no retry, no fail-over")
			assert.Empty(t, e.sleeper.taken())
			s1 := e.snapshot(t, "s1")
			assert.Equal(t, gate.Closed, s1.State)
			assert.Zero(t, s1.ConsecutiveFailures, "Released: the request was wrong, not the source")
			e.requireNothingHeld(t)
		})
	}
}

func TestCallerCancellationReleasesAndReturnsCtxErr(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown) // the call will hold the probe
	ctx, cancel := context.WithCancel(context.Background())
	_, err := retry.Run(ctx, e.loop, 1, func(actx context.Context, src config.Source) (string, transport.Usage, error) {
		cancel()
		<-actx.Done()
		return "", transport.Usage{}, actx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	s := e.snapshot(t, "only")
	assert.Equal(t, gate.HalfOpen, s.State, "a cancellation says nothing about the source")
	assert.Zero(t, s.ProbesInFlight, "the probe lease was released")
	e.requireNothingHeld(t, "only")
}

func TestPerSourceTimeoutIsTheAttemptDeadline(t *testing.T) {
	e := newEnv(t, withScope(func(s *config.ScopeSettings) {
		s.Sources = []config.Source{{Name: "slow", Timeout: 3 * time.Second}, {Name: "fast", Timeout: 9 * time.Second}}
	}))
	var budgets []time.Duration
	v, err := retry.Run(context.Background(), e.loop, 1, func(actx context.Context, src config.Source) (string, transport.Usage, error) {
		dl, ok := actx.Deadline()
		require.True(t, ok)
		budgets = append(budgets, time.Until(dl))
		if src.Name == "slow" {
			return "", transport.Usage{}, context.DeadlineExceeded // the source's timeout fired
		}
		return src.Name, transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "fast", v, "a timeout is a failure: the call fails over")
	require.Len(t, budgets, 2)
	assert.InDelta(t, float64(3*time.Second), float64(budgets[0]), float64(time.Second))
	assert.InDelta(t, float64(9*time.Second), float64(budgets[1]), float64(time.Second))
	assert.Equal(t, gate.Open, e.snapshot(t, "slow").State)
}

func TestPanicInsideAnAttemptLeaksNothing(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown) // the attempt holds the probe lease
	assert.PanicsWithValue(t, "attempt blew up", func() {
		_, _ = retry.Run(context.Background(), e.loop, 50, func(context.Context, config.Source) (string, transport.Usage, error) {
			require.Equal(t, 1, e.quota.InFlight("only"))
			require.Equal(t, 1, e.snapshot(t, "only").ProbesInFlight)
			panic("attempt blew up")
		})
	})
	e.requireNothingHeld(t, "only")
	assert.Equal(t, gate.HalfOpen, e.snapshot(t, "only").State)
	v, err := retry.Run(context.Background(), e.loop, 1, (&script{}).attempt)
	require.NoError(t, err, "the next call gets the probe at once")
	assert.Equal(t, "ok@only", v)
}

// TestWaitingCallIsServedAfterTheCooldown: CIRCUIT_OPEN=wait on a single
// source; the call sleeps to the end of the cooldown and asks the breaker
// twice in all (≤ 2 per cooldown; polling every 50 ms would be ~1,200).
func TestWaitingCallIsServedAfterTheCooldown(t *testing.T) {
	e := newEnv(t, names("only"), withScope(func(s *config.ScopeSettings) { s.CircuitOpen = config.ModeWait }))
	e.open(t, "only")
	v, err := retry.Run(context.Background(), e.loop, 1, (&script{}).attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@only", v)
	assert.Equal(t, []time.Duration{cooldown + poll/2}, e.sleeper.taken())
	queries := e.gate.tryEnter.Load() + e.gate.retryAfter.Load()
	t.Logf("gate queries for one waiting call across one 60s cooldown: %d", queries)
	assert.LessOrEqual(t, queries, int64(2))
}

// TestStalledCallEndsWithinStallWindowPlusOnePoll drives the real StallClock:
// a single source with a bad key under CIRCUIT_OPEN=wait probes after each
// cooldown until the next cooldown would outlast the stall budget; the call
// then ends at once with the error fail_fast gives.
func TestStalledCallEndsWithinStallWindowPlusOnePoll(t *testing.T) {
	e := newEnv(t, names("only"), withScope(func(s *config.ScopeSettings) {
		s.CircuitOpen = config.ModeWait
		s.MaxAttempts = 100
	}))
	start := e.clk.Now()
	attempts := 0
	_, err := retry.Run(context.Background(), e.loop, 1, func(context.Context, config.Source) (string, transport.Usage, error) {
		attempts++
		e.clk.Advance(2 * time.Second) // attempt time does not count as stall
		return "", transport.Usage{}, httpErr(401, 0, "invalid api key")
	})
	var coe *errs.CircuitOpenError
	require.ErrorAs(t, err, &coe, "the third cooldown (240 s) cannot fit in the budget left")
	assert.Equal(t, 4*time.Minute, coe.RetryAfter)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he, "the last attempt's 401 is reachable")
	elapsed := e.clk.Now().Sub(start)
	assert.Equal(t, 3, attempts, "probes after 60 s and 120 s of cooldown; the next cooldown outlasts the budget")
	assert.LessOrEqual(t, elapsed, window+poll+time.Duration(attempts)*2*time.Second,
		"stall time ≤ window + one poll; attempt time comes on top")
}

func TestStallClockCountsOnlyTimeOutsideAttempts(t *testing.T) {
	e := newEnv(t)
	sc := retry.NewStallClock(e.clk, window, nil)
	e.clk.Advance(10 * time.Second) // waiting
	sc.BeginAttempt()
	e.clk.Advance(100 * time.Second) // attempting
	assert.Equal(t, 10*time.Second, sc.StallTime(), "an open attempt is not stall")
	sc.EndAttempt()
	e.clk.Advance(5 * time.Second) // backing off
	assert.Equal(t, 15*time.Second, sc.StallTime())
	assert.Equal(t, window-15*time.Second, sc.Remaining())
}

func TestStalledIsStrictlyAfterTheWindow(t *testing.T) {
	e := newEnv(t)
	sc := retry.NewStallClock(e.clk, window, nil)
	e.clk.Advance(window)
	assert.False(t, sc.Stalled(), "exactly the window is not yet stalled")
	e.clk.Advance(time.Nanosecond)
	assert.True(t, sc.Stalled())
}

func TestStalledOnlyWhenNoCallOfTheScopeDeliveredWithinTheWindow(t *testing.T) {
	e := newEnv(t)
	var d retry.Deliveries
	sc := retry.NewStallClock(e.clk, window, &d)
	e.clk.Advance(window + time.Minute)
	d.Mark(e.clk.Now().Add(-10 * time.Second)) // another call of the scope delivered
	assert.False(t, sc.Stalled(), "the scope is delivering: this call is not stalled")
	e.clk.Advance(window - 10*time.Second)
	assert.False(t, sc.Stalled(), "the delivery is exactly a window old")
	e.clk.Advance(time.Second)
	assert.True(t, sc.Stalled())
}

func TestDeliveriesKeepTheLatest(t *testing.T) {
	var d retry.Deliveries
	_, ok := d.Last()
	assert.False(t, ok)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.Mark(t0.Add(time.Minute))
	d.Mark(t0) // an older success arriving late
	last, _ := d.Last()
	assert.True(t, last.Equal(t0.Add(time.Minute)))
}

// TestStallHorizonCountsTheScopesDeliveries: the horizon is when the call
// would be stalled, so a delivery of another call pushes it back.
func TestStallHorizonCountsTheScopesDeliveries(t *testing.T) {
	e := newEnv(t)
	var d retry.Deliveries
	sc := retry.NewStallClock(e.clk, window, &d)
	e.clk.Advance(window - time.Minute)
	assert.Equal(t, time.Minute, sc.Horizon(), "no delivery: the call's own budget")
	d.Mark(e.clk.Now().Add(-10 * time.Second))
	assert.Equal(t, window-10*time.Second, sc.Horizon(), "a window after the last delivery")
	e.clk.Advance(sc.Horizon())
	assert.False(t, sc.Stalled(), "exactly at the horizon: not yet stalled")
	e.clk.Advance(time.Nanosecond)
	assert.True(t, sc.Stalled())
	assert.Implements(t, (*admission.StallHorizon)(nil), sc)
}
