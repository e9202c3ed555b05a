package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Black-box checks of promises of the package documentation that the
// other tests do not pin, through the public API only, on the default
// memory gate driven by Config.Clock.

var (
	errAuditDown     = errors.New("dependency down")
	errAuditExcluded = errors.New("bad request")
)

type auditEvents struct {
	mu  sync.Mutex
	evs []breaker.StateChange
}

func (a *auditEvents) listen(ev breaker.StateChange) {
	a.mu.Lock()
	a.evs = append(a.evs, ev)
	a.mu.Unlock()
}

func (a *auditEvents) all() []breaker.StateChange {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]breaker.StateChange(nil), a.evs...)
}

func auditBreaker(t *testing.T, p gate.Policy, cfg breaker.Config) (*breaker.Breaker, *contracttest.FakeClock) {
	t.Helper()
	clk := contracttest.NewFakeClock()
	cfg.Policy = p
	cfg.Clock = clk
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cb, err := breaker.New("audit", cfg)
	require.NoError(t, err)
	return cb, clk
}

func auditRun(cb *breaker.Breaker, ret error) error {
	return cb.Execute(context.Background(), func(context.Context) error { return ret })
}

// A gobreaker user maps MaxRequests n onto SuccessThreshold, HalfOpenProbes
// and HalfOpenCalls n, and Timeout onto Cooldown with CooldownMultiplier 1.
// gobreaker then: admits n requests in half-open and answers the next with
// ErrTooManyRequests; closes after n successes; re-opens on any failure in
// half-open, for Timeout again (no growth).
func TestAuditGobreakerMaxRequestsAndTimeout(t *testing.T) {
	const timeout = 30 * time.Second
	var ev auditEvents
	cb, clk := auditBreaker(t, gate.Policy{
		ConsecutiveFailures: 6, SuccessThreshold: 2, HalfOpenProbes: 2, HalfOpenCalls: 2,
		Cooldown: timeout, CooldownMultiplier: 1,
	}, breaker.Config{OnStateChange: []func(breaker.StateChange){ev.listen}})

	for range 6 {
		require.ErrorIs(t, auditRun(cb, errAuditDown), errAuditDown)
	}
	var oe *breaker.OpenError
	require.ErrorAs(t, auditRun(cb, nil), &oe, "ErrOpenState")
	assert.Equal(t, gate.Open, oe.State)
	assert.Equal(t, timeout, oe.RetryAfter)

	// Half-open: two requests, the third is "too many requests".
	clk.Advance(timeout)
	assert.Equal(t, gate.HalfOpen, cb.State())
	t1, err := cb.Allow(t.Context())
	require.NoError(t, err)
	t2, err := cb.Allow(t.Context())
	require.NoError(t, err)
	assert.True(t, t1.Probe() && t2.Probe())
	_, err = cb.Allow(t.Context())
	require.ErrorAs(t, err, &oe, "ErrTooManyRequests")
	assert.Equal(t, gate.HalfOpen, oe.State)
	assert.Zero(t, oe.RetryAfter)
	require.ErrorIs(t, err, breaker.ErrOpen)

	// One failure re-opens at once, for Timeout again.
	t1.Done(errAuditDown)
	assert.Equal(t, gate.Open, cb.State())
	t2.Done(nil) // a late probe of the ended phase changes nothing
	assert.Equal(t, gate.Open, cb.State())
	require.ErrorAs(t, auditRun(cb, nil), &oe)
	assert.Equal(t, timeout, oe.RetryAfter, "CooldownMultiplier 1 keeps gobreaker's constant Timeout")

	// Two successes close it.
	clk.Advance(timeout)
	require.NoError(t, auditRun(cb, nil))
	assert.Equal(t, gate.HalfOpen, cb.State())
	require.NoError(t, auditRun(cb, nil))
	assert.Equal(t, gate.Closed, cb.State())

	var got []string
	for _, e := range ev.all() {
		got = append(got, fmt.Sprintf("%d %s→%s", e.Seq, e.From, e.To))
	}
	assert.Equal(t, []string{
		"1 closed→open", "2 open→half_open", "3 half_open→open",
		"4 open→half_open", "5 half_open→closed",
	}, got, "gobreaker's OnStateChange order and arguments")
}

// StateChange.At and Metrics.LastStateChange are read from Config.Clock.
func TestAuditStateChangeTimesFollowTheConfigClock(t *testing.T) {
	var ev auditEvents
	cb, clk := auditBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute},
		breaker.Config{OnStateChange: []func(breaker.StateChange){ev.listen}})
	clk.Advance(time.Hour)
	at := clk.Now()
	_ = auditRun(cb, errAuditDown)
	evs := ev.all()
	require.Len(t, evs, 1)
	assert.True(t, evs[0].At.Equal(at), "At %v, want the fake clock's %v", evs[0].At, at)
	assert.True(t, cb.Metrics().LastStateChange.Equal(at))
	assert.True(t, evs[0].Metrics.LastStateChange.Equal(at))
}

// Close "clears the gate's counts and the cooldown growth": after a failed
// probe doubled the cooldown, a trip after Close opens for the first
// cooldown again.
func TestAuditCloseDropsTheCooldownGrowth(t *testing.T) {
	cb, clk := auditBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, breaker.Config{})
	var oe *breaker.OpenError
	_ = auditRun(cb, errAuditDown)
	clk.Advance(time.Minute)
	_ = auditRun(cb, errAuditDown) // failed probe: the cooldown grows
	require.ErrorAs(t, auditRun(cb, nil), &oe)
	require.Equal(t, 2*time.Minute, oe.RetryAfter, "the default multiplier doubles the cooldown")

	require.NoError(t, cb.Close())
	assert.Equal(t, gate.Closed, cb.State())
	_ = auditRun(cb, errAuditDown)
	require.ErrorAs(t, auditRun(cb, nil), &oe)
	assert.Equal(t, time.Minute, oe.RetryAfter, "Close dropped the growth")
}

// The caller's cancellation is not counted only when the error is that
// context's error; another error returned after the caller gave up is still
// the dependency's failure.
func TestAuditCancellationIsNotCountedOnlyWithTheContextsError(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Minute}, breaker.Config{})
	run := func(ret func(ctx context.Context) error) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		return cb.Execute(ctx, func(ctx context.Context) error {
			cancel()
			return ret(ctx)
		})
	}

	// Wrapped or not, the ctx's own error: not counted, however often.
	for range 3 {
		err := run(func(ctx context.Context) error { return fmt.Errorf("read: %w", ctx.Err()) })
		require.ErrorIs(t, err, context.Canceled)
	}
	m := cb.Metrics()
	assert.Equal(t, uint64(3), m.Cancelled)
	assert.Zero(t, m.Failures)
	assert.Equal(t, uint64(3), cb.Counts().TotalExclusions)
	assert.Equal(t, gate.Closed, cb.State())

	// Another error after the cancellation: failures, which trip.
	for range 2 {
		require.ErrorIs(t, run(func(context.Context) error { return errAuditDown }), errAuditDown)
	}
	assert.Equal(t, uint64(2), cb.Metrics().Failures)
	assert.Equal(t, gate.Open, cb.State())
}

// Token.Done classifies against the context given to Allow: a probe whose
// caller gave up gives its lease back, so the next caller probes at once.
func TestAuditTokenDoneUsesTheAllowContext(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{Cooldown: time.Minute}, breaker.Config{})
	require.NoError(t, cb.HalfOpen())
	ctx, cancel := context.WithCancel(context.Background())
	tok, err := cb.Allow(ctx)
	require.NoError(t, err)
	require.True(t, tok.Probe())
	_, err = cb.Allow(t.Context())
	require.ErrorIs(t, err, breaker.ErrOpen, "the one probe is taken")

	cancel()
	tok.Done(ctx.Err())
	assert.Equal(t, uint64(1), cb.Metrics().Cancelled)
	assert.Equal(t, gate.HalfOpen, cb.State(), "not counted: the phase is still open")
	next, err := cb.Allow(t.Context())
	require.NoError(t, err, "the lease was given back")
	require.True(t, next.Probe())
	next.Done(nil)
	assert.Equal(t, gate.Closed, cb.State())
}

// failingGate fails every TryEnter, as an unreachable shared gate would.
type failingGate struct{ gate.ProviderGate }

func (failingGate) TryEnter(context.Context, string) (gate.Decision, error) {
	return gate.Decision{}, errors.New("gate unreachable")
}

// Metrics.TotalCalls is every finished call: the sum of its parts, with each
// way a call can end counted once.
func TestAuditMetricsTotalCallsIsTheSumOfItsParts(t *testing.T) {
	cb, clk := auditBreaker(t, gate.Policy{ConsecutiveFailures: 3, Cooldown: time.Minute},
		breaker.Config{ExcludedErrors: []error{errAuditExcluded}})

	require.NoError(t, auditRun(cb, nil))                                // success
	require.ErrorIs(t, auditRun(cb, errAuditExcluded), errAuditExcluded) // excluded
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, cb.Execute(done, func(context.Context) error { return nil }), context.Canceled) // cancelled
	slow, err := cb.Allow(t.Context())                                                                 // admitted before the trip
	require.NoError(t, err)
	require.ErrorIs(t, auditRun(cb, errAuditDown), errAuditDown) // failure
	require.Panics(t, func() {                                   // failure (panic)
		_ = cb.Execute(t.Context(), func(context.Context) error { panic("boom") })
	})
	require.ErrorIs(t, auditRun(cb, breaker.Fatal(errAuditDown)), errAuditDown) // failure (fatal): trips
	require.ErrorIs(t, auditRun(cb, nil), breaker.ErrOpen)                      // rejection
	require.NoError(t, cb.Close())
	slow.Done(errAuditDown) // stale: admitted in an ended generation
	clk.Advance(time.Second)

	m := cb.Metrics()
	assert.Equal(t, uint64(1), m.Successes)
	assert.Equal(t, uint64(3), m.Failures)
	assert.Equal(t, uint64(1), m.Excluded)
	assert.Equal(t, uint64(1), m.Cancelled)
	assert.Equal(t, uint64(1), m.Rejections)
	assert.Equal(t, uint64(1), m.Stale)
	assert.Equal(t, m.Successes+m.Failures+m.Excluded+m.Cancelled+m.Rejections+m.GateErrors+m.Stale, m.TotalCalls)
	assert.Equal(t, uint64(8), m.TotalCalls)

	// A gate error, on a breaker whose gate cannot be reached.
	gcb, err := breaker.New("unreachable", breaker.Config{Gate: failingGate{gate.Noop{}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ran := false
	err = gcb.Execute(t.Context(), func(context.Context) error { ran = true; return nil })
	require.Error(t, err)
	assert.False(t, ran)
	assert.NotErrorIs(t, err, breaker.ErrOpen)
	gm := gcb.Metrics()
	assert.Equal(t, uint64(1), gm.GateErrors)
	assert.Equal(t, uint64(1), gm.TotalCalls)
}

// The gobreaker mapping of MaxRequests is a gate rule, so a Redis gate keeps
// it as the memory gate does: n probes a phase, the next one "too many
// requests" with RetryAfter 0, one failure re-opens for the same Timeout,
// n successes close; and a probe whose caller gave up gives its lease back.
// The probe phases are started with HalfOpen, so no test waits for time.
// Two breakers of one name on one gate stand for two processes.
func TestAuditGobreakerMaxRequestsOnASharedGate(t *testing.T) {
	const timeout = time.Minute
	policy := gate.Policy{ConsecutiveFailures: 6, SuccessThreshold: 2, HalfOpenProbes: 2, HalfOpenCalls: 2,
		Cooldown: timeout, CooldownMultiplier: 1}
	t.Run("memory", func(t *testing.T) {
		mem, err := memory.NewBreaker(policy)
		require.NoError(t, err)
		share := func() *process {
			pr := &process{}
			cb, err := breaker.New("payments", breaker.Config{Gate: mem,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			pr.cb = cb
			return pr
		}
		auditMaxRequests(t, share(), share(), timeout)
	})
	t.Run("redis", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		auditMaxRequests(t, newProcess(t, srv.Addr, policy, breaker.Config{}),
			newProcess(t, srv.Addr, policy, breaker.Config{}), timeout)
	})
}

func auditMaxRequests(t *testing.T, a, b *process, timeout time.Duration) {
	ctx := t.Context()
	for range 6 {
		require.ErrorIs(t, fail(ctx, a.cb), errDown)
	}
	var oe *breaker.OpenError
	require.ErrorAs(t, ok(ctx, b.cb), &oe)
	assert.Equal(t, gate.Open, oe.State)
	assert.InDelta(t, timeout.Seconds(), oe.RetryAfter.Seconds(), 2)

	require.NoError(t, a.cb.HalfOpen())
	t1, err := a.cb.Allow(ctx)
	require.NoError(t, err)
	t2, err := b.cb.Allow(ctx)
	require.NoError(t, err)
	require.True(t, t1.Probe() && t2.Probe())
	_, err = b.cb.Allow(ctx)
	require.ErrorAs(t, err, &oe, "the third request of the phase is one too many")
	assert.Equal(t, gate.HalfOpen, oe.State)
	assert.Zero(t, oe.RetryAfter)
	t2.Done(nil)
	_, err = a.cb.Allow(ctx)
	require.ErrorIs(t, err, breaker.ErrOpen, "the cap is per phase, not per lease in flight")
	t1.Done(errDown)
	assert.Equal(t, gate.Open, b.cb.State(), "one failure in half-open re-opens")
	require.ErrorAs(t, ok(ctx, b.cb), &oe)
	assert.InDelta(t, timeout.Seconds(), oe.RetryAfter.Seconds(), 2, "Timeout again, not grown")

	// A probe whose caller gave up gives its lease back at once.
	require.NoError(t, a.cb.HalfOpen())
	cctx, cancel := context.WithCancel(ctx)
	gone, err := a.cb.Allow(cctx)
	require.NoError(t, err)
	cancel()
	gone.Done(cctx.Err())
	require.NoError(t, ok(ctx, a.cb))
	require.NoError(t, ok(ctx, b.cb))
	assert.Equal(t, gate.Closed, a.cb.State(), "two successes closed it for both")
	assert.Equal(t, gate.Closed, b.cb.State())
	assert.Equal(t, uint64(1), a.cb.Metrics().Cancelled)
}

// Counts and Metrics agree on runs: exclusions and cancellations neither
// extend nor break one, and rejections are not requests.
func TestAuditRunsSkipUncountedCallsAndRejectionsAreNotRequests(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{ConsecutiveFailures: 3, Cooldown: time.Minute},
		breaker.Config{ExcludedErrors: []error{errAuditExcluded}})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	cancelledInside := func() {
		ctx, cancel := context.WithCancel(context.Background())
		_ = cb.Execute(ctx, func(ctx context.Context) error { cancel(); return ctx.Err() })
	}

	_ = auditRun(cb, nil)
	_ = auditRun(cb, errAuditExcluded)
	cancelledInside()
	_ = auditRun(cb, nil)
	c, m := cb.Counts(), cb.Metrics()
	assert.Equal(t, uint64(2), c.ConsecutiveSuccesses)
	assert.Equal(t, uint64(2), m.ConsecutiveSuccesses)
	assert.Equal(t, uint64(4), c.Requests)
	assert.Equal(t, uint64(2), c.TotalExclusions)

	_ = auditRun(cb, errAuditDown)
	_ = auditRun(cb, errAuditExcluded)
	_ = cb.Execute(done, func(context.Context) error { return nil }) // not admitted: not a request
	cancelledInside()
	_ = auditRun(cb, errAuditDown)
	c, m = cb.Counts(), cb.Metrics()
	assert.Equal(t, uint64(2), c.ConsecutiveFailures)
	assert.Zero(t, c.ConsecutiveSuccesses)
	assert.Equal(t, uint64(2), m.ConsecutiveFailures)
	assert.Equal(t, uint64(8), c.Requests)
	assert.Equal(t, gate.Closed, cb.State(), "the gate skipped them too: 2 of 3")

	_ = auditRun(cb, errAuditDown)
	require.Equal(t, gate.Open, cb.State())
	require.ErrorIs(t, auditRun(cb, nil), breaker.ErrOpen)
	assert.Equal(t, breaker.Counts{}, cb.Counts(), "a rejection is not a request")
}

// Fatal opens the breaker from any state: from a probe phase at once,
// whatever probes are still in flight.
func TestAuditFatalOpensFromHalfOpen(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{SuccessThreshold: 2, HalfOpenProbes: 2, HalfOpenCalls: 2,
		Cooldown: time.Minute, CooldownMultiplier: 1}, breaker.Config{})
	require.NoError(t, cb.HalfOpen())
	other, err := cb.Allow(t.Context())
	require.NoError(t, err)
	require.ErrorIs(t, auditRun(cb, breaker.Fatal(errAuditDown)), errAuditDown)
	assert.Equal(t, gate.Open, cb.State())
	var oe *breaker.OpenError
	require.ErrorAs(t, auditRun(cb, nil), &oe)
	assert.Equal(t, time.Minute, oe.RetryAfter)
	other.Done(nil)
	assert.Equal(t, gate.Open, cb.State(), "a probe of the ended phase cannot close it")
}

// Force(ctx, gate.ForceClosed) holds the breaker Closed: failures, Fatal
// errors and a ReadyToTrip that says trip are counted but open nothing,
// until Close lets the policy run again.
func TestAuditForceClosedHoldsAgainstEveryTrip(t *testing.T) {
	var ev auditEvents
	cb, _ := auditBreaker(t, gate.Policy{Cooldown: time.Minute}, breaker.Config{
		ReadyToTrip:   func(c breaker.Counts) bool { return c.TotalFailures >= 2 },
		OnStateChange: []func(breaker.StateChange){ev.listen},
	})
	_ = auditRun(cb, errAuditDown)
	_ = auditRun(cb, errAuditDown)
	require.Equal(t, gate.Open, cb.State())

	require.NoError(t, cb.Force(t.Context(), gate.ForceClosed))
	assert.Equal(t, gate.Closed, cb.State())
	for range 4 {
		require.ErrorIs(t, auditRun(cb, errAuditDown), errAuditDown)
	}
	require.ErrorIs(t, auditRun(cb, breaker.Fatal(errAuditDown)), errAuditDown)
	assert.Equal(t, gate.Closed, cb.State(), "held closed")
	assert.Equal(t, uint64(7), cb.Metrics().Failures, "still counted")

	require.NoError(t, cb.Close())
	_ = auditRun(cb, errAuditDown)
	_ = auditRun(cb, errAuditDown)
	assert.Equal(t, gate.Open, cb.State(), "the policy runs again")

	var got []string
	for _, e := range ev.all() {
		got = append(got, e.From.String()+"→"+e.To.String())
	}
	assert.Equal(t, []string{"closed→open", "open→closed", "closed→open"}, got)
}

// A Token never finished holds its probe lease until Policy.ProbeTTL; then
// another caller probes, and the late Done of the lost probe is Stale: it
// neither re-opens nor closes the breaker.
func TestAuditAnExpiredProbeLeaseIsTakenOverAndItsOutcomeIsStale(t *testing.T) {
	const ttl = 10 * time.Second
	cb, clk := auditBreaker(t, gate.Policy{Cooldown: time.Minute, ProbeTTL: ttl}, breaker.Config{})
	require.NoError(t, cb.HalfOpen())
	lost, err := cb.Allow(t.Context())
	require.NoError(t, err)
	require.True(t, lost.Probe())
	clk.Advance(ttl - time.Millisecond)
	var oe *breaker.OpenError
	_, err = cb.Allow(t.Context())
	require.ErrorAs(t, err, &oe, "the lease still lives")
	assert.Equal(t, gate.HalfOpen, oe.State)

	clk.Advance(time.Millisecond)
	taker, err := cb.Allow(t.Context())
	require.NoError(t, err, "the expired lease is taken over")
	require.True(t, taker.Probe())
	lost.Done(errAuditDown)
	assert.Equal(t, gate.HalfOpen, cb.State(), "the lost probe's failure does not re-open")
	m := cb.Metrics()
	assert.Equal(t, uint64(1), m.Stale)
	assert.Zero(t, m.Failures)
	taker.Done(nil)
	assert.Equal(t, gate.Closed, cb.State())
}

// Interval starts the Counts again only while Closed, as gobreaker's does:
// a probe phase keeps its counts however long it lasts, and the Closed
// phase after it times its Interval from the close.
func TestAuditIntervalClearsOnlyClosedCounts(t *testing.T) {
	const interval = 10 * time.Second
	cb, clk := auditBreaker(t, gate.Policy{SuccessThreshold: 3, HalfOpenProbes: 3, HalfOpenCalls: 3,
		Cooldown: time.Minute, ProbeTTL: time.Hour}, breaker.Config{Interval: interval})
	require.NoError(t, cb.HalfOpen())
	require.NoError(t, auditRun(cb, nil))
	clk.Advance(3 * interval)
	require.NoError(t, auditRun(cb, nil))
	c := cb.Counts()
	assert.Equal(t, uint64(2), c.TotalSuccesses, "half-open counts do not roll")
	assert.Equal(t, uint64(2), c.ConsecutiveSuccesses)

	clk.Advance(interval / 2)
	require.NoError(t, auditRun(cb, nil))
	require.Equal(t, gate.Closed, cb.State())
	require.ErrorIs(t, auditRun(cb, errAuditDown), errAuditDown)
	clk.Advance(interval - time.Millisecond)
	assert.Equal(t, uint64(1), cb.Counts().TotalFailures, "the Interval runs from the close")
	clk.Advance(time.Millisecond)
	assert.Equal(t, breaker.Counts{}, cb.Counts())
}

// gobreaker's rolling window (Interval with a BucketPeriod) spans Interval,
// whatever the number of buckets: Interval 60s in buckets of 20s forgets an
// outcome about 60s later. The gate's Window is that span, so the mapping
// is Policy.Window = Interval: an outcome is still in the window well
// inside it and gone a bucket past it.
func TestAuditGobreakerRollingWindowSpansInterval(t *testing.T) {
	const interval, bucketPeriod = 60 * time.Second, 20 * time.Second
	cb, clk := auditBreaker(t, gate.Policy{ConsecutiveFailures: gate.Disabled,
		Window: interval, WindowMinCalls: 3, WindowFailureRate: 0.6}, breaker.Config{})
	window := func() int {
		snap, err := cb.Gate().Snapshot(t.Context(), cb.Name())
		require.NoError(t, err)
		return snap.WindowCalls
	}
	_ = auditRun(cb, errAuditDown)
	_ = auditRun(cb, errAuditDown)
	clk.Advance(interval - bucketPeriod)
	assert.Equal(t, 2, window(), "still inside gobreaker's window")
	clk.Advance(bucketPeriod + interval/10)
	assert.Zero(t, window(), "gobreaker has rotated them out by now")
	_ = auditRun(cb, errAuditDown)
	assert.Equal(t, gate.Closed, cb.State(), "one failure of 1 in the window: gobreaker would not trip either")
}

// A panic in fn continues with its original value even when recording it
// as a failure trips the breaker and a state-change listener panics too:
// the caller recovers what its function panicked with, and the failure is
// recorded.
func TestAuditPanicKeepsItsValueWhenTheTripsListenerPanics(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, breaker.Config{
		OnStateChange: []func(breaker.StateChange){func(ev breaker.StateChange) {
			if ev.To == gate.Open {
				panic("listener")
			}
		}},
	})
	type fnPanic struct{}
	var got any
	func() {
		defer func() { got = recover() }()
		_ = cb.Execute(t.Context(), func(context.Context) error { panic(fnPanic{}) })
	}()
	assert.Equal(t, fnPanic{}, got, "the function's panic, not the listener's")
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, uint64(1), cb.Metrics().Failures)
}

// Close drops every probe lease: a probe that finishes after it is stale
// and counts against nothing; an Open hold rejects with RetryAfter 0.
func TestAuditCloseDropsProbeLeasesAndOpenHoldsWithoutAnEnd(t *testing.T) {
	cb, _ := auditBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, breaker.Config{})
	require.NoError(t, cb.HalfOpen())
	probe, err := cb.Allow(t.Context())
	require.NoError(t, err)
	require.True(t, probe.Probe())
	require.NoError(t, cb.Close())
	probe.Done(errAuditDown)
	assert.Equal(t, gate.Closed, cb.State(), "the dropped probe's failure trips nothing")
	m := cb.Metrics()
	assert.Equal(t, uint64(1), m.Stale)
	assert.Zero(t, m.Failures)

	require.NoError(t, cb.Open())
	var oe *breaker.OpenError
	require.ErrorAs(t, auditRun(cb, nil), &oe)
	assert.Equal(t, gate.Open, oe.State)
	assert.Zero(t, oe.RetryAfter, "a hold has no certain end")
	assert.Equal(t, gate.Open, cb.State())
}

// A ForceClosed hold made by one process holds every process sharing a
// Redis gate: another process's failures and Fatal errors open nothing
// until the hold is lifted.
func TestAuditForceClosedHoldsEveryProcessOnRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	ctx := t.Context()
	policy := gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Minute, CooldownMultiplier: 1}
	a := newProcess(t, srv.Addr, policy, breaker.Config{})
	b := newProcess(t, srv.Addr, policy, breaker.Config{})
	require.NoError(t, a.cb.Force(ctx, gate.ForceClosed))
	for range 4 {
		require.ErrorIs(t, fail(ctx, b.cb), errDown)
	}
	require.ErrorIs(t, b.cb.Execute(ctx, func(context.Context) error { return breaker.Fatal(errDown) }), errDown)
	assert.Equal(t, gate.Closed, b.cb.State(), "held closed for B too")
	assert.Equal(t, uint64(5), b.cb.Metrics().Failures)
	require.NoError(t, a.cb.Close())
	require.ErrorIs(t, fail(ctx, b.cb), errDown)
	require.ErrorIs(t, fail(ctx, b.cb), errDown)
	assert.Equal(t, gate.Open, a.cb.State(), "the policy runs again")
}
