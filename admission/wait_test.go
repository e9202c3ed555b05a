package admission_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
)

// TestHalfOpenRejectionNoLongerPollutesTheMemo is the stale-probe-wait
// regression: call B, rejected while call A holds the probe, must not keep
// the source blacklisted in this process after A's probe closes the breaker.
func TestHalfOpenRejectionNoLongerPollutesTheMemo(t *testing.T) {
	f := newFixture(t)
	f.open(t, "s1")
	f.clk.Advance(cooldown)

	a, _, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	require.True(t, a.Decision.Probe)

	b, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	require.Nil(t, b)
	assert.Equal(t, admission.Rejections{{Source: "s1", Reason: admission.CircuitOpen, RetryAfter: 0}}, rej,
		"a HalfOpen rejection carries no certain wait, never the %v lease", probeTTL)
	assert.False(t, f.adm.Memo().Active("s1", f.clk.Now()), "and leaves no memo entry")

	require.NoError(t, a.Done(context.Background(), admission.Result{Outcome: gate.Success}))
	require.Equal(t, gate.Closed, f.snapshot(t, "s1").State)

	b, _, err = f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	require.NotNil(t, b, "the recovered source is admitted again at once")
	require.NoError(t, b.Done(context.Background(), admission.Result{Outcome: gate.Success}))

	f.clk.Advance(2 * cooldown)
	assert.False(t, f.adm.Memo().Active("s1", f.clk.Now()))
}

func TestWaitDoesNotRaiseAndSleepsByRetryAfter(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait))
	f.open(t, "s1")
	f.clk.Advance(15 * time.Second)
	tk, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	require.NoError(t, err)
	assert.Equal(t, "s1", tk.Source)
	assert.Equal(t, []time.Duration{45*time.Second + jitter}, f.sleeper.taken(),
		"sleeps to the certain end of the cooldown plus jitter, not poll by poll")
}

// TestWaitWithQuotaFailFastNeverReportsQuotaExhaustedForABreakerWait is the
// reason-dispatch trap: dispatch is by rejection reason, so a breaker wait does
// not fall through into the quota branch.
func TestWaitWithQuotaFailFastNeverReportsQuotaExhaustedForABreakerWait(t *testing.T) {
	f := newFixture(t, withModes(admission.FailFast, admission.Wait),
		withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}))
	f.open(t, "s1")
	f.clk.Advance(30 * time.Second)
	f.open(t, "s2") // s1 recovers in 30s, s2 in 60s
	_, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	call := f.adm.NewCall(f.stall())
	require.NoError(t, call.OnNoRunnable(context.Background(), rej), "a breaker wait, not quota_exhausted")

	tk, err := f.run(context.Background(), call, succeed)
	require.NoError(t, err)
	assert.Equal(t, "s1", tk.Source)
}

// TestWorstWallTimeOfAWaitingCallIsStallWindowPlusOnePoll: however long the
// cooldown and whatever the jitter, a waiting call that is never admitted ends
// stalled no later than the stall window plus one poll interval.
func TestWorstWallTimeOfAWaitingCallIsStallWindowPlusOnePoll(t *testing.T) {
	for _, c := range []struct {
		name string
		r    float64
		prep func(t *testing.T, f *fixture)
	}{
		{"a cooldown longer than the window (upstream Retry-After 1h)", 0.5, func(t *testing.T, f *fixture) {
			f.adm.HoldOff("s1", time.Hour)
		}},
		{"force_open, growing cooldowns, low jitter", 0, func(t *testing.T, f *fixture) { f.forceOpen(t, "s1") }},
		{"force_open, growing cooldowns, high jitter", 0.999, func(t *testing.T, f *fixture) { f.forceOpen(t, "s1") }},
		{"a probe in flight for longer than the window (HalfOpen polling)", 0.3, func(t *testing.T, f *fixture) {
			f.open(t, "s1")
			f.clk.Advance(cooldown)
			f.takeProbe(t, "s1") // its holder vanished: the lease lasts 600s
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, admission.Wait), withRand(func() float64 { return c.r }))
			c.prep(t, f)
			start := f.clk.Now()
			_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), badKey)
			elapsed := f.clk.Now().Sub(start)
			assert.LessOrEqual(t, elapsed, window+poll)
			var coe *errs.CircuitOpenError
			if errors.As(err, &coe) {
				// A certain wait past the stall budget ends the call at once.
				assert.Greater(t, coe.RetryAfter, window-elapsed, "given up only when the wait cannot fit")
				return
			}
			var ase *errs.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			if ase.Reason == errs.ReasonQuotaExhausted {
				// An upstream's hold-off past the stall budget ends the
				// call at once, with the quota's fail_fast error.
				assert.Greater(t, ase.RetryAfter, window-elapsed, "given up only when the wait cannot fit")
				return
			}
			assert.Equal(t, errs.ReasonStalled, ase.Reason)
			assert.Greater(t, elapsed, window, "stalled only once the window is exceeded")
		})
	}
}

func TestStalledErrorCarriesPerSourceReasonsIncludingCircuitOpen(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait),
		withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}))
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	f.takeProbe(t, "s1") // s1: HalfOpen, its probe held by a vanished call
	f.forceOpen(t, "s2") // s2: Open
	f.clk.Advance(time.Second)
	f.sleeper.onNap = func(int) {
		// keep s2 open: a bad key that every other caller keeps hitting
		if f.snapshot(t, "s2").State != gate.Open {
			f.forceOpen(t, "s2")
		}
	}
	_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), badKey)
	var ase *errs.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, errs.ReasonStalled, ase.Reason)
	assert.Equal(t, "circuit_open", ase.Reasons["s1"])
	assert.Contains(t, []string{"cooldown", "circuit_open"}, ase.Reasons["s2"])
	assert.Equal(t, "CHAT", ase.Scope)
}

func TestFailFastIsTheDefault(t *testing.T) {
	f := newFixture(t, withModes("", ""))
	f.open(t, "s1")
	_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	var coe *errs.CircuitOpenError
	require.ErrorAs(t, err, &coe, "CIRCUIT_OPEN defaults to fail_fast")
	assert.Empty(t, f.sleeper.taken())

	g := newFixture(t, withModes("", ""))
	g.quota.setReject("s1", time.Second)
	g.sleeper.onNap = func(int) { g.quota.clear("s1") }
	_, err = g.run(context.Background(), g.adm.NewCall(g.stall()), succeed)
	require.NoError(t, err, "QUOTA_FULL defaults to wait")
	assert.Len(t, g.sleeper.taken(), 1)
}

func TestMultiSourceScopeWithOneOpenSourceKeepsServingWithoutWaiting(t *testing.T) {
	for _, mode := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("CIRCUIT_OPEN="+string(mode), func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, mode),
				withSources(admission.Source{Name: "s1", Weight: 100}, admission.Source{Name: "s2"}, admission.Source{Name: "s3"}))
			f.open(t, "s1")
			for range 50 {
				tk, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
				require.NoError(t, err)
				assert.NotEqual(t, "s1", tk.Source)
			}
			assert.Empty(t, f.sleeper.taken())
			assert.Equal(t, int64(50+1), f.gate.tryEnter.Load(),
				"one query per admission; the open source costs one, then the memo answers for it")
		})
	}
}

func TestCancellationDuringAWaitReturnsCtxErrAtOnceHoldingNothing(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait),
		withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}, admission.Source{Name: "s3"}),
		withRand(func() float64 { return 0 }))
	f.open(t, "s1")
	f.clk.Advance(cooldown)              // s1 grants its probe, then loses to the quota
	f.quota.setReject("s1", time.Minute) // → the probe must be released
	f.pacer.limit["s2"] = 0              // s2 gets a permit, then loses to the pacer
	f.quota.setReject("s3", time.Minute) // s3 rate limited
	sleeping := make(chan struct{})
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}, {Name: "s2"}, {Name: "s3"}},
		Breaker: f.gate, Quota: f.quota, Pacer: f.pacer, Clock: f.clk, Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			close(sleeping)
			<-ctx.Done()
			return ctx.Err()
		},
		Logger: slog.New(f.logs),
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.run(ctx, adm.NewCall(f.stall()), succeed)
		done <- err
	}()
	select {
	case <-sleeping:
	case err := <-done:
		t.Fatalf("the call ended without waiting: %v", err)
	}
	assert.Zero(t, f.snapshot(t, "s1").ProbesInFlight, "no probe lease held while waiting")
	f.assertNothingHeld(t)
	queries := f.gate.queries()

	cancel()
	err = await(t, done, "the cancelled call's return")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, queries, f.gate.queries(), "no further round after the cancellation")
	f.assertNothingHeld(t)
}

func TestPanicInsideAnAttemptLeaksNothing(t *testing.T) {
	f := newFixture(t)
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	tk, _, err := f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.True(t, tk.Decision.Probe)

	assert.PanicsWithValue(t, "attempt blew up", func() {
		var res admission.Result
		defer func() { _ = tk.Done(context.Background(), res) }()
		panic("attempt blew up")
	})
	assert.Zero(t, f.quota.held("s1"), "the permit went back")
	assert.Zero(t, f.quota.tokens("s1"), "and its reservation")
	assert.Zero(t, f.pacer.holding("s1"))
	s := f.snapshot(t, "s1")
	assert.Zero(t, s.ProbesInFlight, "the probe lease was freed")
	assert.Equal(t, gate.HalfOpen, s.State, "a panic says nothing about the source: Released")

	next, _, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.True(t, next.Decision.Probe, "the next call gets the probe at once, not after the lease")
	require.NoError(t, next.Done(context.Background(), admission.Result{Outcome: gate.Success}))
}

// TestWaitingCallMakesAtMostTwoGateQueriesPerCooldown counts what one
// waiting call asks the breaker across cooldowns: polling every 50 ms would be
// about 1,200 queries per 60 s cooldown.
func TestWaitingCallMakesAtMostTwoGateQueriesPerCooldown(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait))
	f.open(t, "s1")
	_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	require.NoError(t, err)
	t.Logf("one 60s cooldown: %d gate queries (TryEnter %d, RetryAfter %d)",
		f.gate.queries(), f.gate.tryEnter.Load(), f.gate.retryAfter.Load())
	assert.LessOrEqual(t, f.gate.queries(), int64(2), "the rejection and the probe")

	g := newFixture(t, withModes(admission.Wait, admission.Wait))
	g.forceOpen(t, "s1")
	_, err = g.run(context.Background(), g.adm.NewCall(g.stall()), badKey)
	require.Error(t, err)
	cooldowns := int64(len(g.sleeper.taken()))
	t.Logf("force_open until stalled: %d gate queries over %d cooldowns", g.gate.queries(), cooldowns)
	assert.LessOrEqual(t, g.gate.queries(), 2*cooldowns+1, "and the round that finds the next cooldown past the stall budget")
}

func TestWaitLogsOneLineEnteringAndOneLeaving(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait))
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	probe := f.takeProbe(t, "s1")
	f.sleeper.onNap = func(n int) {
		if n == 5 {
			_, err := f.breaker.Record(context.Background(), "s1", probe, gate.Success)
			require.NoError(t, err)
		}
	}
	_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	require.NoError(t, err)
	require.Len(t, f.sleeper.taken(), 5)

	var lines []slog.Record // the wait's lines; breaker state changes log at Info too
	for _, r := range f.logs.records(slog.LevelInfo) {
		if !strings.HasPrefix(r.Message, "pgw: breaker state change") {
			lines = append(lines, r)
		}
	}
	require.Len(t, lines, 2, "five naps, one wait: one line in, one line out")
	in, out := attrs(lines[0]), attrs(lines[1])
	assert.Equal(t, "CHAT", in["scope"].String())
	assert.Equal(t, "circuit_open", in["reason"].String())
	assert.Equal(t, map[string]string{"s1": "circuit_open"}, in["reasons"].Any())
	assert.Equal(t, time.Duration(0), in["retry_after"].Duration())
	assert.Equal(t, jitter, in["wait"].Duration())
	assert.Equal(t, "CHAT", out["scope"].String())
	assert.Equal(t, "admitted", out["outcome"].String())
	assert.Equal(t, "s1", out["source"].String())
	assert.Equal(t, 5*jitter, out["waited"].Duration())
}
