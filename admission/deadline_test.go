package admission_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/internal/errs"
)

// TestWaitEndsAtOnceWhenTheCooldownEndsPastTheCallersDeadline: a wait call
// with a 2 s deadline and a 60 s cooldown ahead gets the error fail_fast
// would give, at once, instead of sleeping into context.DeadlineExceeded.
func TestWaitEndsAtOnceWhenTheCooldownEndsPastTheCallersDeadline(t *testing.T) {
	for _, mode := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("CIRCUIT_OPEN="+string(mode), func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, mode))
			f.open(t, "s1")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := f.run(ctx, f.adm.NewCall(f.stall()), succeed)
			var coe *errs.CircuitOpenError
			require.ErrorAs(t, err, &coe)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, cooldown, coe.RetryAfter, "the certain wait, as fail_fast reports it")
			assert.Equal(t, []string{"s1"}, coe.Sources)
			assert.Empty(t, f.sleeper.taken(), "no sleep at all")
			assert.NoError(t, ctx.Err(), "returned long before the deadline")
			f.assertNothingHeld(t)
		})
	}
}

func TestWaitEndsAtOnceWhenTheQuotaRefillsPastTheCallersDeadline(t *testing.T) {
	for _, mode := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("CIRCUIT_OPEN="+string(mode), func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, mode),
				withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}))
			f.quota.setReject("s1", 30*time.Second)
			f.open(t, "s2") // 60 s: the earliest admission is s1's refill
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := f.run(ctx, f.adm.NewCall(f.stall()), succeed)
			var ase *errs.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason, "the quota_full error, as QUOTA_FULL=fail_fast gives it")
			assert.Equal(t, 30*time.Second, ase.RetryAfter)
			assert.Equal(t, map[string]string{"s1": "rate_limited", "s2": "circuit_open"}, ase.Reasons)
			assert.Empty(t, f.sleeper.taken())
			f.assertNothingHeld(t)

			var line slog.Record
			for _, r := range f.logs.records(slog.LevelInfo) {
				if r.Message == "pgw: no source can be admitted in time; not waiting" {
					line = r
				}
			}
			require.NotZero(t, line.Message, "the give-up is logged")
			assert.Equal(t, "deadline", attrs(line)["bound"].String())
		})
	}
}

// TestWaitWithinTheDeadlineStillWaitsAndWakesBeforeIt: a certain wait that
// ends before the deadline is waited out, and the nap's jitter never pushes
// the wake-up past the deadline.
func TestWaitWithinTheDeadlineStillWaitsAndWakesBeforeIt(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait))
	f.open(t, "s1")
	ctx, cancel := context.WithTimeout(context.Background(), cooldown+20*time.Millisecond)
	defer cancel()
	tk, err := f.run(ctx, f.adm.NewCall(f.stall()), succeed)
	require.NoError(t, err)
	assert.True(t, tk.Decision.Probe)
	naps := f.sleeper.taken()
	require.Len(t, naps, 1)
	assert.GreaterOrEqual(t, naps[0], cooldown, "not before the cooldown ends")
	assert.Less(t, naps[0], cooldown+20*time.Millisecond, "the jittered nap (%v) is cut to fit the deadline", cooldown+jitter)
}

// TestUncertainWaitIsNotCutByTheDeadline: with a probe in flight there is no
// certain wait — the probe may answer any moment — so a deadline does not end
// the call early.
func TestUncertainWaitIsNotCutByTheDeadline(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait))
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	f.takeProbe(t, "s1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, rej, err := f.adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	require.NoError(t, f.adm.NewCall(f.stall()).OnNoRunnable(ctx, rej), "a nap, not an error")
	assert.Equal(t, []time.Duration{jitter}, f.sleeper.taken())
}

// horizonStall is a stall budget whose horizon a test sets: other calls of
// the scope delivered, so the call is not stalled when its own budget ends.
type horizonStall struct {
	fakeStall
	horizon time.Duration
}

func (h *horizonStall) Horizon() time.Duration { return h.horizon }

func TestWaitPastTheStallBudgetEndsAtOnce(t *testing.T) {
	for _, mode := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("quota wait, CIRCUIT_OPEN="+string(mode), func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, mode))
			f.quota.setReject("s1", window+time.Second)
			_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
			var ase *errs.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
			assert.Equal(t, window+time.Second, ase.RetryAfter)
			assert.Empty(t, f.sleeper.taken())
		})
	}
	t.Run("an upstream's Retry-After hold-off", func(t *testing.T) {
		// A hold-off asked for by the upstream is a quota-like rejection,
		// so QUOTA_FULL's fail_fast error ends the call, with its wait.
		f := newFixture(t, withModes(admission.Wait, admission.Wait))
		f.adm.HoldOff("s1", time.Hour)
		_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
		var ase *errs.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
		assert.Equal(t, time.Hour, ase.RetryAfter)
		assert.Equal(t, map[string]string{"s1": "retry_after"}, ase.Reasons)
		assert.Empty(t, f.sleeper.taken())
	})
	t.Run("a delivery of the scope extends the horizon", func(t *testing.T) {
		f := newFixture(t, withModes(admission.Wait, admission.Wait))
		f.quota.setReject("s1", 2*time.Minute)
		f.sleeper.onNap = func(int) { f.quota.clear("s1") }
		st := &horizonStall{fakeStall: fakeStall{clk: f.clk, start: f.clk.Now().Add(-window + time.Minute), window: window},
			horizon: 5 * time.Minute}
		_, err := f.run(context.Background(), f.adm.NewCall(st), succeed)
		require.NoError(t, err, "one minute of budget left, but the scope delivered: the call will not stall, so it waits")
		assert.Len(t, f.sleeper.taken(), 1)
	})
}
