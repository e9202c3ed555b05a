package breaker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
)

// These tests use the public API only, the way a user coming from
// gobreaker or failsafe-go configures the breaker: Config.Policy and
// Config.Clock, no access to the package's internals.

var (
	errUpstream = errors.New("upstream 503")
	errExcluded = errors.New("bad request")
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newFakeClockBreaker returns a breaker on the default memory gate, driven by a fake
// clock.
func newFakeClockBreaker(t *testing.T, cfg breaker.Config) (*breaker.Breaker, *contracttest.FakeClock) {
	t.Helper()
	clk := contracttest.NewFakeClock()
	cfg.Clock = clk
	cfg.Logger = quiet()
	b, err := breaker.New("fake-clock", cfg)
	require.NoError(t, err)
	return b, clk
}

func fail503(context.Context) error   { return errUpstream }
func succeedFn(context.Context) error { return nil }

// gobreaker's TestTwoStepCircuitBreaker: MaxRequests 2 with IsExcluded; in
// half-open, two calls in flight make the others "too many requests"
// (pgw: an *OpenError of State HalfOpen with RetryAfter 0), and excluded
// outcomes free their places.
func TestGobreaker_TwoStepCircuitBreaker(t *testing.T) {
	const timeout = 60 * time.Second
	b, clk := newFakeClockBreaker(t, breaker.Config{
		Policy: gate.Policy{
			ConsecutiveFailures: 6, Cooldown: timeout, CooldownMultiplier: 1,
			SuccessThreshold: 2, HalfOpenProbes: 2, HalfOpenCalls: 2,
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errExcluded) },
	})
	step := func(err error) error {
		tok, aerr := b.Allow(t.Context())
		if aerr != nil {
			return aerr
		}
		tok.Done(err)
		return nil
	}
	for range 5 {
		require.NoError(t, step(errUpstream))
	}
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, breaker.Counts{Requests: 5, TotalFailures: 5, ConsecutiveFailures: 5}, b.Counts())

	require.NoError(t, step(nil))
	assert.Equal(t, breaker.Counts{Requests: 6, TotalSuccesses: 1, TotalFailures: 5, ConsecutiveSuccesses: 1}, b.Counts())
	require.NoError(t, step(errUpstream))
	assert.Equal(t, breaker.Counts{Requests: 7, TotalSuccesses: 1, TotalFailures: 6, ConsecutiveFailures: 1}, b.Counts())

	for range 5 {
		require.NoError(t, step(errUpstream))
	}
	assert.Equal(t, gate.Open, b.State())
	assert.Equal(t, breaker.Counts{}, b.Counts())
	for _, err := range []error{nil, errUpstream, errExcluded} {
		require.ErrorIs(t, step(err), breaker.ErrOpen)
	}
	assert.Equal(t, breaker.Counts{}, b.Counts(), "rejections are not requests")

	clk.Advance(timeout - time.Millisecond)
	assert.Equal(t, gate.Open, b.State())
	clk.Advance(time.Second)
	assert.Equal(t, gate.HalfOpen, b.State())

	t1, err := b.Allow(t.Context())
	require.NoError(t, err)
	t2, err := b.Allow(t.Context())
	require.NoError(t, err)
	for _, e := range []error{nil, errUpstream} {
		err := step(e)
		var oe *breaker.OpenError
		require.ErrorAs(t, err, &oe, "too many requests")
		assert.Equal(t, gate.HalfOpen, oe.State)
		assert.Zero(t, oe.RetryAfter)
	}
	t1.Done(errExcluded)
	t2.Done(errExcluded)
	require.NoError(t, step(nil), "excluded outcomes gave their places back")
	assert.Equal(t, gate.HalfOpen, b.State())

	require.NoError(t, step(errUpstream))
	assert.Equal(t, gate.Open, b.State())
	assert.Equal(t, breaker.Counts{}, b.Counts())

	clk.Advance(timeout + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, b.State())
	require.NoError(t, step(nil))
	require.NoError(t, step(nil))
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, breaker.Counts{}, b.Counts())
}

// gobreaker's MaxRequests is a per-phase cap: once n requests were admitted
// in one half-open phase, a further one is "too many requests" even after
// the first ones finished, until the phase is decided.
func TestHalfOpenCallsCapsRequestsPerPhaseNotInFlight(t *testing.T) {
	b, clk := newFakeClockBreaker(t, breaker.Config{Policy: gate.Policy{
		ConsecutiveFailures: 1, Cooldown: time.Second, CooldownMultiplier: 1,
		SuccessThreshold: 2, HalfOpenProbes: 3, HalfOpenCalls: 3,
	}})
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	clk.Advance(time.Second)

	// failure (tolerated: 2 successes are still reachable in 3), success,
	// then the third probe is still out: the fourth request is refused.
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	assert.Equal(t, gate.HalfOpen, b.State(), "one failure of three tolerated")
	require.NoError(t, b.Execute(t.Context(), succeedFn))
	third, err := b.Allow(t.Context())
	require.NoError(t, err)
	var oe *breaker.OpenError
	require.ErrorAs(t, b.Execute(t.Context(), succeedFn), &oe)
	assert.Equal(t, gate.HalfOpen, oe.State)
	assert.Zero(t, oe.RetryAfter)
	assert.Equal(t, breaker.Counts{Requests: 3, TotalSuccesses: 1, TotalFailures: 1, ConsecutiveSuccesses: 1}, b.Counts())

	third.Done(nil)
	assert.Equal(t, gate.Closed, b.State(), "second success closes")

	// Two failures of three: the threshold can no longer be reached.
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	clk.Advance(time.Second)
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	assert.Equal(t, gate.Open, b.State())
}

// A probe whose caller gives up is not a failure: its lease is given back
// at once, and the next caller probes.
func TestCancelledProbeGivesTheLeaseBack(t *testing.T) {
	b, clk := newFakeClockBreaker(t, breaker.Config{Policy: gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: time.Hour}})
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	clk.Advance(time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	err := b.Execute(ctx, func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, gate.HalfOpen, b.State())
	assert.Equal(t, uint64(1), b.Metrics().Cancelled)
	require.NoError(t, b.Execute(t.Context(), succeedFn), "the lease was given back")
	assert.Equal(t, gate.Closed, b.State())
}

// A panicking probe is a failure: the breaker re-opens and the panic goes
// on with its value, through Do and DoResult alike.
func TestPanickingProbeReopensAndRepanics(t *testing.T) {
	for _, via := range []string{"Do", "DoResult"} {
		t.Run(via, func(t *testing.T) {
			var changes []gate.State
			b, clk := newFakeClockBreaker(t, breaker.Config{Policy: gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, CooldownMultiplier: 1}})
			b.OnStateChange(func(ev breaker.StateChange) { changes = append(changes, ev.To) })
			require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
			clk.Advance(time.Second)
			boom := func(context.Context) (int, error) { panic("boom") }
			require.PanicsWithValue(t, "boom", func() {
				if via == "Do" {
					_, _ = breaker.Do(t.Context(), b, boom)
					return
				}
				_, _ = breaker.DoResult(t.Context(), b, boom, func(int, error) bool { return false })
			})
			assert.Equal(t, gate.Open, b.State())
			assert.Equal(t, []gate.State{gate.Open, gate.HalfOpen, gate.Open}, changes)
			m := b.Metrics()
			assert.Equal(t, uint64(2), m.Failures)
			assert.Equal(t, uint64(2), m.TotalCalls)
		})
	}
}

// Under concurrency a half-open phase with HalfOpenCalls n grants exactly n
// requests, however many goroutines race for them (run with -race).
func TestHalfOpenCallsUnderConcurrency(t *testing.T) {
	const n = 3
	b, clk := newFakeClockBreaker(t, breaker.Config{Policy: gate.Policy{
		ConsecutiveFailures: 1, Cooldown: time.Second,
		SuccessThreshold: n, HalfOpenProbes: n, HalfOpenCalls: n,
	}})
	require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	clk.Advance(time.Second)

	release := make(chan struct{})
	var admitted, rejected atomic.Int64
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	for range 32 {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			err := b.Execute(t.Context(), func(context.Context) error {
				admitted.Add(1)
				ready.Done()
				<-release
				return nil
			})
			if errors.Is(err, breaker.ErrOpen) {
				rejected.Add(1)
				ready.Done()
			}
		}()
	}
	ready.Wait()
	assert.Equal(t, int64(n), admitted.Load())
	assert.Equal(t, int64(32-n), rejected.Load())
	assert.Equal(t, uint64(n), b.Counts().Requests)
	close(release)
	wg.Wait()
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, uint64(1+n), b.Metrics().Successes+b.Metrics().Failures)
}
