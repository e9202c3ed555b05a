package breaker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestTripRejectsWithErrOpenAndExactRetryAfter(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 3, Cooldown: 10 * time.Second}, Config{})
	trip(t, b, 3)

	clk.Advance(4 * time.Second)
	ran := false
	err := b.Execute(t.Context(), func(context.Context) error { ran = true; return nil })
	assert.False(t, ran, "a rejected call must not run")
	require.ErrorIs(t, err, ErrOpen)
	oe, ok := errors.AsType[*OpenError](err)
	require.True(t, ok)
	assert.Equal(t, "api", oe.Name)
	assert.Equal(t, gate.Open, oe.State)
	assert.Equal(t, 6*time.Second, oe.RetryAfter)
	assert.Equal(t, "PGW-CB-OPEN", oe.Code())
	assert.Contains(t, err.Error(), `"api" is open: retry after 6s`)
	assert.Equal(t, uint64(1), b.Metrics().Rejections)
}

func TestFailuresBelowThresholdDoNotTrip(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 3}, Config{})
	for range 5 {
		require.Error(t, b.Execute(t.Context(), fail))
		require.Error(t, b.Execute(t.Context(), fail))
		require.NoError(t, b.Execute(t.Context(), succeed)) // a success breaks the run
	}
	assert.Equal(t, gate.Closed, b.State())
	m := b.Metrics()
	assert.Equal(t, uint64(10), m.Failures)
	assert.Equal(t, uint64(5), m.Successes)
	assert.Equal(t, uint64(1), m.ConsecutiveSuccesses)
	assert.Zero(t, m.ConsecutiveFailures)
}

func TestHalfOpenProbeClosesOnSuccess(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second}, Config{})
	trip(t, b, 1)
	clk.Advance(10 * time.Second)

	err := b.Execute(t.Context(), func(ctx context.Context) error {
		assert.Equal(t, gate.HalfOpen, b.State(), "the probe runs HalfOpen")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, gate.Closed, b.State())
	require.NoError(t, b.Execute(t.Context(), succeed))
}

func TestHalfOpenRejectionRetryAfterIsZero(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second, ProbeTTL: time.Hour}, Config{})
	trip(t, b, 1)
	clk.Advance(10 * time.Second)

	probe, err := b.Allow(t.Context())
	require.NoError(t, err)
	require.True(t, probe.Probe())

	err = b.Execute(t.Context(), succeed)
	oe, ok := errors.AsType[*OpenError](err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, gate.HalfOpen, oe.State)
	assert.Zero(t, oe.RetryAfter, "a HalfOpen rejection never waits the probe lease")
	assert.Contains(t, oe.Error(), "retry at any moment")
	probe.Done(nil)
	assert.Equal(t, gate.Closed, b.State())
}

func TestHalfOpenProbeFailureReopensWithGrownCooldown(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second}, Config{})
	trip(t, b, 1)
	clk.Advance(10 * time.Second)

	require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	assert.Equal(t, gate.Open, b.State())
	oe, ok := errors.AsType[*OpenError](b.Execute(t.Context(), succeed))
	require.True(t, ok)
	assert.Equal(t, 20*time.Second, oe.RetryAfter, "cooldown doubles after a failed probe")
}

func TestFatalOpensAtOnce(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 5, Cooldown: 10 * time.Second}, Config{})
	denied := errors.New("401 unauthorized")
	err := b.Execute(t.Context(), func(context.Context) error { return Fatal(denied) })
	require.ErrorIs(t, err, denied, "Fatal unwraps to the marked error")
	assert.Equal(t, gate.Open, b.State())
	assert.Equal(t, uint64(1), b.Metrics().Failures)
	assert.Nil(t, Fatal(nil))
	assert.Equal(t, "401 unauthorized", Fatal(denied).Error())
}

func TestExcludedErrorsAreNotCounted(t *testing.T) {
	errValidation := errors.New("validation failed")
	cases := []struct {
		name string
		cfg  Config
	}{
		{"IsExcluded", Config{IsExcluded: func(err error) bool { return errors.Is(err, errValidation) }}},
		{"ExcludedErrors", Config{ExcludedErrors: []error{errors.New("other"), errValidation}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, tc.cfg)
			require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
			for range 10 {
				err := b.Execute(t.Context(), func(context.Context) error {
					return fmt.Errorf("field x: %w", errValidation)
				})
				require.ErrorIs(t, err, errValidation, "the error is returned unchanged")
			}
			assert.Equal(t, gate.Closed, b.State())
			m := b.Metrics()
			assert.Equal(t, uint64(10), m.Excluded)
			assert.Equal(t, uint64(1), m.Failures)
			assert.Equal(t, uint64(1), m.ConsecutiveFailures, "excluded errors do not break a run")
			assert.Equal(t, gate.Released, l.recorded()[1])

			require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
			assert.Equal(t, gate.Open, b.State(), "the run of failures went on across excluded errors")
		})
	}
}

// A probe ending in an excluded error, a cancellation or a Goexit gives its
// lease back: the next caller probes at once instead of waiting the lease TTL.
func TestUncountedProbeGivesBackLease(t *testing.T) {
	errValidation := errors.New("validation failed")
	cases := []struct {
		name  string
		probe func(t *testing.T, b *Breaker)
	}{
		{"excluded error", func(t *testing.T, b *Breaker) {
			require.ErrorIs(t, b.Execute(t.Context(), func(context.Context) error { return errValidation }), errValidation)
		}},
		{"caller cancellation", func(t *testing.T, b *Breaker) {
			ctx, cancel := context.WithCancel(t.Context())
			err := b.Execute(ctx, func(ctx context.Context) error { cancel(); return ctx.Err() })
			require.ErrorIs(t, err, context.Canceled)
		}},
		{"Goexit", func(t *testing.T, b *Breaker) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = b.Execute(context.Background(), func(context.Context) error { runtime.Goexit(); return nil })
			}()
			<-done
		}},
		{"Allow then Done with excluded error", func(t *testing.T, b *Breaker) {
			tok, err := b.Allow(t.Context())
			require.NoError(t, err)
			tok.Done(errValidation)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, l := newTestBreaker(t,
				gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second, ProbeTTL: time.Hour},
				Config{ExcludedErrors: []error{errValidation}})
			trip(t, b, 1)
			clk.Advance(10 * time.Second)
			tc.probe(t, b)
			assert.Equal(t, gate.Released, l.recorded()[1])
			assert.Equal(t, gate.HalfOpen, b.State())

			tok, err := b.Allow(t.Context())
			require.NoError(t, err, "the lease was given back, so the next caller may probe")
			assert.True(t, tok.Probe())
			tok.Done(nil)
			assert.Equal(t, gate.Closed, b.State())
		})
	}
}

func TestCallerCancellationIsNotAFailure(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1}, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	err := b.Execute(ctx, func(ctx context.Context) error { cancel(); return fmt.Errorf("dial: %w", ctx.Err()) })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, gate.Closed, b.State())
	m := b.Metrics()
	assert.Equal(t, uint64(1), m.Cancelled)
	assert.Zero(t, m.Failures)

	// A ctx already done is not admitted: the function never runs, and the
	// call is a cancelled one, not a gate error.
	ran := false
	err = b.Execute(ctx, func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, ran, "a call whose ctx is already done does not run")
	m = b.Metrics()
	assert.Equal(t, uint64(2), m.Cancelled)
	assert.Zero(t, m.GateErrors)
}

// A deadline the function set itself is the dependency being slow: a failure.
func TestInnerTimeoutIsAFailure(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1}, Config{})
	err := b.Execute(t.Context(), func(context.Context) error { return context.DeadlineExceeded })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, gate.Open, b.State())
}

func TestPanicIsRecordedAsFailureAndRepanicked(t *testing.T) {
	b, clk, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: 10 * time.Second, ProbeTTL: time.Hour}, Config{})
	type boom struct{ n int }
	require.PanicsWithValue(t, boom{1}, func() {
		_ = b.Execute(t.Context(), func(context.Context) error { panic(boom{1}) })
	})
	m := b.Metrics()
	assert.Equal(t, uint64(1), m.Failures)
	assert.Equal(t, uint64(1), m.ConsecutiveFailures)
	assert.Equal(t, []gate.Outcome{gate.Failure}, l.recorded())

	// Through Do as well, tripping the breaker.
	require.PanicsWithValue(t, boom{2}, func() {
		_, _ = Do(t.Context(), b, func(context.Context) (int, error) { panic(boom{2}) })
	})
	require.Equal(t, gate.Open, b.State())

	// A panicking probe re-opens the breaker and holds no lease: after the
	// grown cooldown the next caller probes, long before the hour-long TTL.
	clk.Advance(10 * time.Second)
	require.Panics(t, func() {
		_ = b.Execute(t.Context(), func(context.Context) error { panic("probe blew up") })
	})
	require.Equal(t, gate.Open, b.State())
	clk.Advance(20 * time.Second)
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	assert.True(t, tok.Probe())
	tok.Done(nil)
	assert.Equal(t, gate.Closed, b.State())
}

func TestAllowDoneTwiceIsNoOp(t *testing.T) {
	b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, Config{})
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	assert.False(t, tok.Probe())
	tok.Done(errBoom)
	tok.Done(errBoom)
	tok.Done(nil)
	assert.Equal(t, []gate.Outcome{gate.Failure}, l.recorded())
	assert.Equal(t, uint64(1), b.Metrics().TotalCalls)
	assert.Equal(t, gate.Closed, b.State(), "one failure of two")

	var none *Token
	assert.NotPanics(t, func() { none.Done(nil) })
	assert.False(t, none.Probe())
}

func TestAllowRejectedReturnsNilToken(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, Config{})
	trip(t, b, 1)
	tok, err := b.Allow(t.Context())
	assert.Nil(t, tok)
	oe, ok := errors.AsType[*OpenError](err)
	require.True(t, ok)
	assert.Equal(t, time.Minute, oe.RetryAfter)
}

func TestDoReturnsValueAndZeroOnRejection(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1}, Config{})
	v, err := Do(t.Context(), b, func(context.Context) (string, error) { return "ok", nil })
	require.NoError(t, err)
	assert.Equal(t, "ok", v)

	v, err = Do(t.Context(), b, func(context.Context) (string, error) { return "partial", errBoom })
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, "partial", v, "the function's value is returned with its error")

	v, err = Do(t.Context(), b, func(context.Context) (string, error) { return "never", nil })
	require.ErrorIs(t, err, ErrOpen)
	assert.Empty(t, v)
}

func TestWrapSharesTheBreaker(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, Config{})
	callA := Wrap(b, fail)
	callB := WrapValue(b, func(context.Context) (int, error) { return 0, errBoom })
	require.ErrorIs(t, callA(t.Context()), errBoom)
	_, err := callB(t.Context())
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, gate.Open, b.State(), "both wrapped functions count on one breaker")
	_, err = callB(t.Context())
	require.ErrorIs(t, err, ErrOpen)
	assert.Panics(t, func() { Wrap(b, nil) })
	assert.Panics(t, func() { WrapValue[int](nil, nil) })
}

func TestMetricsTotals(t *testing.T) {
	errValidation := errors.New("validation")
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 3, Cooldown: time.Minute}, Config{ExcludedErrors: []error{errValidation}})
	require.NoError(t, b.Execute(t.Context(), succeed))
	require.NoError(t, b.Execute(t.Context(), succeed))
	require.Error(t, b.Execute(t.Context(), func(context.Context) error { return errValidation }))
	ctx, cancel := context.WithCancel(t.Context())
	require.Error(t, b.Execute(ctx, func(ctx context.Context) error { cancel(); return ctx.Err() }))
	trip(t, b, 3)
	require.Error(t, b.Execute(t.Context(), succeed))

	m := b.Metrics()
	assert.Equal(t, Metrics{
		Name: "api", State: gate.Open, TotalCalls: 8,
		Successes: 2, Failures: 3, Excluded: 1, Cancelled: 1, Rejections: 1,
		ConsecutiveFailures: 3,
		LastStateChange:     m.LastStateChange,
	}, m)
	assert.False(t, m.LastStateChange.IsZero())
}

func TestGateErrorIsReturnedWrapped(t *testing.T) {
	down := errors.New("redis down")
	g := &scriptGate{enterErr: down}
	b, err := New("api", Config{Gate: g, Logger: discardLogger()})
	require.NoError(t, err)
	ran := false
	err = b.Execute(t.Context(), func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, down)
	assert.NotErrorIs(t, err, ErrOpen)
	assert.Contains(t, err.Error(), `breaker "api"`)
	assert.False(t, ran)
	assert.Equal(t, uint64(1), b.Metrics().GateErrors)
}

// A failed Record is logged, not returned: the call's own result stands.
func TestRecordErrorKeepsCallResult(t *testing.T) {
	g := &scriptGate{decision: gate.Decision{Allowed: true}, recErr: errors.New("redis down")}
	b, err := New("api", Config{Gate: g, Logger: discardLogger()})
	require.NoError(t, err)
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, uint64(1), b.Metrics().Successes)
}

// A breaker given a gate uses its name as the source key: two breakers of the
// same name on one gate share one state, as processes sharing a Redis gate do.
func TestSharedGateUsesNameAsSource(t *testing.T) {
	b1, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, Config{})
	b2, err := New("api", Config{Gate: b1.Gate(), Logger: discardLogger()})
	require.NoError(t, err)
	other, err := New("other", Config{Gate: b1.Gate(), Logger: discardLogger()})
	require.NoError(t, err)

	trip(t, b1, 1)
	require.ErrorIs(t, b2.Execute(t.Context(), succeed), ErrOpen)
	assert.Equal(t, gate.Open, b2.State(), "b2 observed the state b1 caused")
	require.NoError(t, other.Execute(t.Context(), succeed))
	snap, err := b1.Gate().Snapshot(t.Context(), "api")
	require.NoError(t, err)
	assert.Equal(t, gate.Open, snap.State)
}

func TestZeroConfigUsesDefaultPolicy(t *testing.T) {
	b, err := New("api", Config{Logger: discardLogger()})
	require.NoError(t, err)
	for range gate.DefaultConsecutiveFailures - 1 {
		require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	}
	assert.Equal(t, gate.Closed, b.State())
	require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	assert.Equal(t, gate.Open, b.State())
	oe, ok := errors.AsType[*OpenError](b.Execute(t.Context(), succeed))
	require.True(t, ok)
	assert.Greater(t, oe.RetryAfter, gate.DefaultCooldown-time.Minute/2)
	assert.LessOrEqual(t, oe.RetryAfter, gate.DefaultCooldown)
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cases := []struct {
		name     string
		breaker  string
		cfg      Config
		problems []string
	}{
		{"empty name", "", Config{}, []string{`name=""`}},
		{"policy with gate", "api", Config{Gate: gate.Noop{}, Policy: gate.Policy{Cooldown: time.Second}}, []string{"Policy=", "with Gate set"}},
		{"clock with gate", "api", Config{Gate: gate.Noop{}, Clock: gate.SystemClock{}}, []string{"Clock=gate.SystemClock with Gate set"}},
		{"invalid policy", "api", Config{Policy: gate.Policy{Cooldown: -time.Second, CooldownMultiplier: 0.5}}, []string{"Policy.Cooldown=-1s", "Policy.CooldownMultiplier=0.5"}},
		{"nil excluded error", "api", Config{ExcludedErrors: []error{errBoom, nil}}, []string{"ExcludedErrors[1]=nil"}},
		{"nil listener", "api", Config{OnStateChange: []func(StateChange){nil}}, []string{"OnStateChange[0]=nil"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.breaker, tc.cfg)
			assert.Nil(t, b)
			ce, ok := errors.AsType[*ConfigError](err)
			require.True(t, ok, "got %v", err)
			assert.Equal(t, "PGW-CB-CONFIG", ce.Code())
			for _, p := range tc.problems {
				assert.Contains(t, err.Error(), p)
			}
		})
	}

	_, err := New("api", Config{Policy: gate.Policy{Cooldown: -time.Second}})
	_, ok := errors.AsType[*gate.PolicyError](err)
	assert.True(t, ok, "a policy problem unwraps to the gate's *PolicyError")
}

func TestNilFunctionPanicsWithoutAskingTheGate(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{}, Config{})
	assert.PanicsWithValue(t, "pgw/breaker: Execute called with a nil function", func() { _ = b.Execute(t.Context(), nil) })
	assert.Panics(t, func() { _, _ = Do[int](t.Context(), b, nil) })
	assert.Zero(t, b.Metrics().TotalCalls)
}
