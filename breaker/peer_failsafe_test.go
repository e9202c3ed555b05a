package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// The scenarios of failsafe-go's circuitbreaker/*_test.go and
// test/circuitbreaker_test.go, translated: each test is named after the one
// it mirrors, runs with failsafe-go's settings mapped as the package
// documentation's table says, on a fake clock (a sleep is clk.Advance), and
// keeps failsafe-go's expectations except where a comment names a
// documented difference. RecordSuccess and RecordFailure are an Allow and
// its Done; IsOpen, IsClosed and IsHalfOpen read State; RemainingDelay is
// the gate Snapshot's RetryAfter.

var errFsInvalid = errors.New("invalid argument")

// fsSettings are the failsafe-go builder settings the tests use; zero
// fields are failsafe-go's defaults (failure threshold 1 of 1, no success
// threshold, a one-minute delay).
type fsSettings struct {
	failures, failCap     int           // WithFailureThresholdRatio(failures, failCap); WithFailureThreshold(n) is n of n
	successes, succCap    int           // WithSuccessThresholdRatio(successes, succCap); WithSuccessThreshold(n) is n of n
	period                time.Duration // WithFailureThresholdPeriod / WithFailureRateThreshold period
	rate                  float64       // WithFailureRateThreshold rate
	minExecs              int           // WithFailureRateThreshold executions / the period rule's threshold
	delay                 time.Duration // WithDelay; 0 means the default minute unless delayZero
	delayZero             bool          // WithDelay(0): pgw's shortest cooldown, 1ms
	onOpen, onClose, onHO func(StateChange)
}

// newFailsafe builds a breaker as failsafe-go would run with s:
//   - Closed, count-based: FailureThreshold failures of the last CountWindow
//     outcomes (the gate's consecutive rule off);
//   - Closed, time-based: the gate's window (Window = period, WindowFailures
//     or WindowFailureRate, WindowMinCalls);
//   - HalfOpen: with a success threshold s of capacity c, SuccessThreshold
//     s and HalfOpenCalls = HalfOpenProbes = c; without one, the failure
//     threshold f of capacity c read the other way round: SuccessThreshold
//     c − f + 1, HalfOpenCalls = HalfOpenProbes = c (for the rate rule,
//     SuccessThreshold is the least count above 1 − rate of the minimum
//     executions);
//   - Delay is a Cooldown that never grows.
func newFailsafe(t *testing.T, s fsSettings) (*Breaker, *contracttest.FakeClock) {
	t.Helper()
	if s.failures == 0 {
		s.failures, s.failCap = 1, 1
	}
	if s.failCap == 0 {
		s.failCap = s.failures
	}
	if s.successes > 0 && s.succCap == 0 {
		s.succCap = s.successes
	}
	delay := time.Minute
	if s.delay > 0 {
		delay = s.delay
	}
	if s.delayZero {
		delay = time.Millisecond
	}
	p := gate.Policy{ConsecutiveFailures: gate.Disabled, Cooldown: delay, CooldownMultiplier: 1}
	cfg := Config{Logger: discardLogger()}
	capacity := s.failCap
	switch {
	case s.period > 0 && s.rate > 0:
		p.Window, p.WindowMinCalls, p.WindowFailureRate = s.period, s.minExecs, s.rate
		capacity = s.minExecs
		p.SuccessThreshold = int(float64(s.minExecs)*(1-s.rate)) + 1
	case s.period > 0:
		p.Window, p.WindowMinCalls, p.WindowFailures = s.period, s.failures, s.failures
		capacity = s.failures
		p.SuccessThreshold = capacity - s.failures + 1
	default:
		cfg.FailureThreshold, cfg.CountWindow = s.failures, s.failCap
		p.SuccessThreshold = capacity - s.failures + 1
	}
	p.HalfOpenCalls, p.HalfOpenProbes = capacity, capacity
	if s.successes > 0 {
		p.SuccessThreshold, p.HalfOpenCalls, p.HalfOpenProbes = s.successes, s.succCap, s.succCap
	}
	clk := contracttest.NewFakeClock()
	g, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	cfg.Gate = g
	b, err := New("fs", cfg)
	require.NoError(t, err)
	b.clock = clk
	b.tally = newTally(0, cfg.CountWindow, clk)
	if s.onOpen != nil {
		b.OnOpen(s.onOpen)
	}
	if s.onClose != nil {
		b.OnClose(s.onClose)
	}
	if s.onHO != nil {
		b.OnHalfOpen(s.onHO)
	}
	return b, clk
}

func fsRecord(b *Breaker, err error) {
	if tok, aerr := b.Allow(context.Background()); aerr == nil {
		tok.Done(err)
	}
}

func fsRecordSuccess(b *Breaker) { fsRecord(b, nil) }
func fsRecordFailure(b *Breaker) { fsRecord(b, errFsInvalid) }
func fsIsOpen(b *Breaker) bool   { return b.State() == gate.Open }
func fsIsClosed(b *Breaker) bool { return b.State() == gate.Closed }
func fsIsHalfOpen(b *Breaker) bool {
	return b.State() == gate.HalfOpen
}

func fsRemainingDelay(t *testing.T, b *Breaker) time.Duration {
	snap, err := b.Gate().Snapshot(t.Context(), b.Name())
	require.NoError(t, err)
	return snap.RetryAfter
}

func fsHalfOpen(t *testing.T, b *Breaker) { require.NoError(t, b.HalfOpen()) }
func fsClose(t *testing.T, b *Breaker)    { require.NoError(t, b.Close()) }

// circuitbreaker/circuitbreaker_test.go

func TestFailsafe_ShouldDefaultDelay(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{})
	fsRecordFailure(b)
	assert.True(t, fsIsOpen(b))
	assert.Equal(t, time.Minute, fsRemainingDelay(t, b))
}

// failsafe-go rounds its rates to two decimals; they are compared to within
// half a hundredth.
func TestFailsafe_GetSuccessAndFailureStats(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 5, failCap: 10, successes: 15, succCap: 20})
	for i := range 7 {
		if i%2 == 0 {
			fsRecordSuccess(b)
		} else {
			fsRecordFailure(b)
		}
	}
	c := b.Counts()
	assert.Equal(t, uint64(3), c.TotalFailures)
	assert.InDelta(t, .43, c.FailureRate(), .005)
	assert.Equal(t, uint64(4), c.TotalSuccesses)
	assert.InDelta(t, .57, c.SuccessRate(), .005)

	for i := range 15 {
		if i%4 == 0 {
			fsRecordFailure(b)
		} else {
			fsRecordSuccess(b)
		}
	}
	c = b.Counts()
	assert.Equal(t, uint64(2), c.TotalFailures)
	assert.InDelta(t, .2, c.FailureRate(), .005)
	assert.Equal(t, uint64(8), c.TotalSuccesses)
	assert.InDelta(t, .8, c.SuccessRate(), .005)

	fsHalfOpen(t, b)
	for i := range 15 {
		if i%3 == 0 {
			fsRecordFailure(b)
		} else {
			fsRecordSuccess(b)
		}
	}
	c = b.Counts()
	assert.Equal(t, uint64(5), c.TotalFailures)
	assert.InDelta(t, .33, c.FailureRate(), .005)
	assert.Equal(t, uint64(10), c.TotalSuccesses)
	assert.InDelta(t, .67, c.SuccessRate(), .005)
}

// circuitbreaker/closedstate_test.go

func TestFailsafe_ClosedStateFailureWithDefaultConfig(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{})
	fsClose(t, b)
	assert.True(t, fsIsClosed(b))
	fsRecordFailure(b)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_ClosedStateFailureWithFailureThreshold(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 3})
	fsClose(t, b)
	fsRecordFailure(b)
	fsRecordSuccess(b)
	fsRecordFailure(b)
	fsRecordFailure(b)
	assert.True(t, fsIsClosed(b))
	fsRecordFailure(b)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_ClosedStateFailureWithFailureRatio(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 2, failCap: 3})
	fsClose(t, b)
	fsRecordFailure(b)
	fsRecordSuccess(b)
	assert.True(t, fsIsClosed(b))
	fsRecordFailure(b)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_ClosedStateSuccessWithDefaultConfig(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{})
	fsClose(t, b)
	assert.True(t, fsIsClosed(b))
	fsRecordSuccess(b)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_ClosedStateSuccessWithFailureRatio(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 3, failCap: 4})
	fsClose(t, b)
	assert.True(t, fsIsClosed(b))
	for range 20 {
		fsRecordSuccess(b)
		fsRecordFailure(b)
		assert.True(t, fsIsClosed(b))
	}
}

func TestFailsafe_ClosedStateSuccessWithFailureThreshold(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 2})
	fsClose(t, b)
	assert.True(t, fsIsClosed(b))
	for range 20 {
		fsRecordSuccess(b)
		fsRecordFailure(b)
		assert.True(t, fsIsClosed(b))
	}
}

// circuitbreaker/halfopenstate_test.go

// fsHalfOpenRun puts a breaker built with s in HalfOpen, records outcomes
// (true: success) checking it stays HalfOpen between them, and returns it.
func fsHalfOpenRun(t *testing.T, s fsSettings, outcomes ...bool) *Breaker {
	t.Helper()
	b, _ := newFailsafe(t, s)
	fsHalfOpen(t, b)
	for _, ok := range outcomes {
		assert.False(t, fsIsOpen(b))
		assert.False(t, fsIsClosed(b))
		if ok {
			fsRecordSuccess(b)
		} else {
			fsRecordFailure(b)
		}
	}
	return b
}

const fsS, fsF = true, false

func TestFailsafe_HalfOpenStateFailureWithDefaultConfig(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{}, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithFailureThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 3}, fsF, fsF, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithFailureRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 2, failCap: 3}, fsF, fsS, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessAndFailureThresholds(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 3, failures: 2}, fsS, fsS, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessAndFailureRatios(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 3, succCap: 4, failures: 3, failCap: 5}, fsS, fsF, fsS, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 2, succCap: 3}, fsF, fsS, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessRatioAndFailureThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 2, succCap: 4, failures: 1}, fsS, fsF, fsF, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 3}, fsS, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenFailureWithSuccessThresholdAndFailureRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 3, failures: 3, failCap: 5}, fsF)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_HalfOpenSuccessWithDefaultConfig(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{}, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithFailureRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 2, failCap: 3}, fsF, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithFailureThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 3}, fsF, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessAndFailureRatios(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 3, failCap: 5, successes: 3, succCap: 4}, fsS, fsF, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessAndFailureThresholds(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 2, successes: 3}, fsS, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 2, succCap: 3}, fsF, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessRatioAndFailureThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 2, successes: 3, succCap: 4}, fsS, fsS, fsF, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessThreshold(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{successes: 3}, fsS, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_HalfOpenSuccessWithSuccessThresholdAndFailureRatio(t *testing.T) {
	b := fsHalfOpenRun(t, fsSettings{failures: 3, failCap: 5, successes: 2}, fsS, fsS)
	assert.True(t, fsIsClosed(b))
}

func TestFailsafe_RemainingDelayInHalfOpenState(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{delay: time.Second})
	fsHalfOpen(t, b)
	assert.Equal(t, time.Duration(0), fsRemainingDelay(t, b))
}

// circuitbreaker/openstate_test.go (failsafe-go's internal open() is a
// recorded failure under the default threshold of 1)

func TestFailsafe_TryAcquirePermit(t *testing.T) {
	b, clk := newFailsafe(t, fsSettings{delay: 100 * time.Millisecond})
	fsRecordFailure(b)
	assert.True(t, fsIsOpen(b))
	_, err := b.Allow(t.Context())
	assert.ErrorIs(t, err, ErrOpen)

	clk.Advance(110 * time.Millisecond)
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	assert.True(t, fsIsHalfOpen(b))
	tok.Done(nil)
}

func TestFailsafe_RemainingDelay(t *testing.T) {
	b, clk := newFailsafe(t, fsSettings{delay: time.Second})
	fsRecordFailure(b)
	d := fsRemainingDelay(t, b)
	assert.True(t, d > 0)
	assert.True(t, d.Milliseconds() < 1001)

	clk.Advance(110 * time.Millisecond)
	d = fsRemainingDelay(t, b)
	assert.True(t, d > 0)
	assert.True(t, d.Milliseconds() < 900)
}

func TestFailsafe_NoRemainingDelay(t *testing.T) {
	b, clk := newFailsafe(t, fsSettings{delay: 10 * time.Millisecond})
	assert.Equal(t, time.Duration(0), fsRemainingDelay(t, b))
	fsRecordFailure(b)
	assert.True(t, fsRemainingDelay(t, b) > 0)
	clk.Advance(50 * time.Millisecond)
	assert.Equal(t, time.Duration(0), fsRemainingDelay(t, b))
}

// test/circuitbreaker_test.go, TestCircuitBreaker's subtests

func TestFailsafe_CircuitBreaker_ShouldRejectInitialExecutionWhenCircuitOpen(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{})
	require.NoError(t, b.Open())
	ran := 0
	err := b.Execute(t.Context(), func(context.Context) error { ran++; return errFsInvalid })
	assert.ErrorIs(t, err, ErrOpen)
	assert.Zero(t, ran)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_CircuitBreaker_ShouldRejectExcessiveAttemptsWhenBreakerHalfOpen(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{successes: 3})
	fsHalfOpen(t, b)
	var toks []*Token
	for range 3 {
		tok, err := b.Allow(t.Context())
		require.NoError(t, err)
		toks = append(toks, tok)
	}
	for range 5 {
		assert.ErrorIs(t, b.Execute(t.Context(), succeed), ErrOpen)
	}
	for _, tok := range toks {
		tok.Done(nil)
	}
}

// Difference: WithDelay(0) has no counterpart; the shortest Cooldown is
// 1ms (an Open phase always has an end after its start). The second half of
// the peer test runs a retry policy on a breaker it never uses, which
// says nothing about a breaker.
func TestFailsafe_CircuitBreaker_WithoutConditions(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{delayZero: true})
	err := b.Execute(t.Context(), func(context.Context) error { return errFsInvalid })
	assert.ErrorIs(t, err, errFsInvalid)
	assert.True(t, fsIsOpen(b))
}

func TestFailsafe_CircuitBreaker_ShouldReturnErrOpenAfterFailuresExceeded(t *testing.T) {
	b, _ := newFailsafe(t, fsSettings{failures: 2, delay: 10 * time.Second})
	handleFalse := func(v bool, err error) bool { return err != nil || !v }
	get := func(v bool) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return v, nil }
	}
	_, _ = DoResult(t.Context(), b, get(false), handleFalse)
	_, _ = DoResult(t.Context(), b, get(false), handleFalse)
	ran := false
	_, err := DoResult(t.Context(), b, func(context.Context) (bool, error) { ran = true; return true, nil }, handleFalse)
	assert.ErrorIs(t, err, ErrOpen)
	assert.False(t, ran)
	assert.True(t, fsIsOpen(b))
}

// Difference: Counts start again at every state change (gobreaker's rule),
// so once Open they are empty; the counts of the Closed phase that tripped
// are the StateChange's Counts, and Metrics keep the totals. failsafe-go
// keeps showing the Closed phase's metrics while Open.
func TestFailsafe_CircuitBreaker_WithRejectedRetries(t *testing.T) {
	var atOpen Counts
	b, _ := newFailsafe(t, fsSettings{failures: 3, onOpen: func(ev StateChange) { atOpen = ev.Counts }})
	executions, retries := 0, 0
	var err error
	for attempt := range 7 {
		if attempt > 0 {
			retries++
		}
		executions++
		err = b.Execute(t.Context(), func(context.Context) error { return errFsInvalid })
	}
	assert.ErrorIs(t, err, ErrOpen)
	assert.Equal(t, 7, executions)
	assert.Equal(t, 6, retries)
	assert.Equal(t, uint64(3), atOpen.Executions())
	assert.Equal(t, uint64(3), atOpen.TotalFailures)
	assert.Equal(t, uint64(3), b.Metrics().Failures)
	assert.Equal(t, uint64(4), b.Metrics().Rejections)
}

// fsGet runs a call through DoResult with failsafe-go's HandleResult(false).
func fsGet(b *Breaker, v bool) {
	_, _ = DoResult(context.Background(), b, func(context.Context) (bool, error) { return v, nil },
		func(v bool, err error) bool { return err != nil || !v })
}

// Difference: WithDelay(0) has no counterpart (the shortest Cooldown is
// 1ms), so where failsafe-go's next call finds the delay over, the clock
// first moves by that millisecond.
func TestFailsafe_CircuitBreaker_ShouldSupportTimeBasedFailureThreshold(t *testing.T) {
	b, clk := newFailsafe(t, fsSettings{failures: 2, period: 200 * time.Millisecond, delayZero: true})
	fsGet(b, false)
	fsGet(b, true)
	// Force results to roll off
	clk.Advance(210 * time.Millisecond)
	fsGet(b, false)
	fsGet(b, true)
	// Force result to another bucket
	clk.Advance(50 * time.Millisecond)
	assert.True(t, fsIsClosed(b))
	fsGet(b, false)
	assert.True(t, fsIsOpen(b))
	clk.Advance(time.Millisecond) // the delay
	fsGet(b, false)
	assert.True(t, fsIsHalfOpen(b))
	// Half-open -> Open
	fsGet(b, false)
	assert.True(t, fsIsOpen(b))
	clk.Advance(time.Millisecond) // the delay
	fsGet(b, false)
	assert.True(t, fsIsHalfOpen(b))
	// Half-open -> Closed
	fsGet(b, true)
	assert.True(t, fsIsClosed(b))
}

// Differences: the 1ms shortest Cooldown, as above; and a HalfOpen phase is
// decided as soon as its outcome is certain. With a rate of 0.5 over 3
// executions, 2 failures already make a success ratio above 0.5
// unreachable, so pgw re-opens at the second failure where failsafe-go
// waits for the third execution. The assertions after that point follow
// pgw's phases: the third failure is the first probe of the next phase.
func TestFailsafe_CircuitBreaker_ShouldSupportTimeBasedFailureRateThresholding(t *testing.T) {
	b, clk := newFailsafe(t, fsSettings{rate: .5, minExecs: 3, period: 200 * time.Millisecond, delayZero: true})
	fsGet(b, false)
	fsGet(b, true)
	// Force results to roll off
	clk.Advance(210 * time.Millisecond)
	fsGet(b, false)
	fsGet(b, true)
	// Force result to another bucket
	clk.Advance(50 * time.Millisecond)
	fsGet(b, true)
	assert.True(t, fsIsClosed(b))
	fsGet(b, false)
	assert.True(t, fsIsOpen(b))
	clk.Advance(time.Millisecond) // the delay
	fsGet(b, false)
	assert.True(t, fsIsHalfOpen(b))
	fsGet(b, false)
	assert.True(t, fsIsOpen(b), "pgw: 2 of 3 failed, the phase is decided (failsafe-go: still half-open)")
	clk.Advance(time.Millisecond)
	fsGet(b, false)
	assert.True(t, fsIsHalfOpen(b), "pgw: the first probe of a new phase (failsafe-go: open)")
	fsGet(b, true)
	fsGet(b, true)
	assert.True(t, fsIsClosed(b), "2 successes of 3 close")
}

func TestFailsafe_CircuitBreaker_SupportCallOnOpenListener_WithoutContext(t *testing.T) {
	called := false
	b, _ := newFailsafe(t, fsSettings{failures: 1, failCap: 2, onOpen: func(ev StateChange) {
		called = true
		assert.Equal(t, uint64(1), ev.Counts.TotalFailures)
		assert.Equal(t, uint64(1), ev.Counts.TotalSuccesses)
		assert.Equal(t, context.Background(), ev.Context)
	}})
	fsRecordSuccess(b)
	fsRecordFailure(b)
	assert.True(t, called)
}

func TestFailsafe_CircuitBreaker_SupportCallOnOpenListener_WithContext(t *testing.T) {
	called := false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, _ := newFailsafe(t, fsSettings{failures: 1, onOpen: func(ev StateChange) {
		called = true
		assert.Equal(t, ctx, ev.Context)
	}})
	_, _ = Do(ctx, b, func(context.Context) (any, error) { return nil, errFsInvalid })
	assert.True(t, called)
}

func TestFailsafe_CircuitBreaker_ShouldCallOnCloseListener(t *testing.T) {
	called := false
	b, _ := newFailsafe(t, fsSettings{successes: 3, succCap: 5, onClose: func(ev StateChange) {
		called = true
		assert.Equal(t, uint64(2), ev.Counts.TotalFailures)
		assert.Equal(t, uint64(3), ev.Counts.TotalSuccesses)
	}})
	fsHalfOpen(t, b)
	fsRecordFailure(b)
	fsRecordFailure(b)
	fsRecordSuccess(b)
	fsRecordSuccess(b)
	fsRecordSuccess(b)
	assert.True(t, called)
}
