package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/admission"
)

func TestNapFormula(t *testing.T) {
	const p = 100 * time.Millisecond
	cases := []struct {
		name      string
		hint      time.Duration
		remaining time.Duration
		r         float64
		want      time.Duration
	}{
		{"no hint is the jittered poll, low end", 0, time.Hour, 0, 50 * time.Millisecond},
		{"no hint is the jittered poll, high end", 0, time.Hour, 0.999999, p - 1*time.Microsecond/10},
		{"a hint sleeps to it and adds the jitter, never scales it", 60 * time.Second, time.Hour, 0.5, 60*time.Second + 75*time.Millisecond},
		{"clamped to the remaining stall budget plus one poll", 60 * time.Second, 10 * time.Second, 0.5, 10*time.Second + p},
		{"an exhausted budget still naps one poll, never spins", 60 * time.Second, -5 * time.Second, 0.5, p},
		{"an exhausted budget keeps the plain jittered poll", 0, -5 * time.Second, 0, 50 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := admission.Nap(c.hint, p, c.remaining, c.r)
			assert.InDelta(t, float64(c.want), float64(got), float64(time.Microsecond))
		})
	}
}

func TestNapNeverExceedsRemainingStallPlusOnePoll(t *testing.T) {
	const p = 50 * time.Millisecond
	for _, hint := range []time.Duration{0, time.Millisecond, time.Second, 10 * time.Minute} {
		for _, rem := range []time.Duration{-time.Second, 0, time.Millisecond, time.Second, time.Hour} {
			for _, r := range []float64{0, 0.3, 0.999} {
				got := admission.Nap(hint, p, rem, r)
				assert.LessOrEqual(t, got, max(rem, 0)+p, "hint=%v remaining=%v r=%v", hint, rem, r)
				assert.GreaterOrEqual(t, got, p/2, "hint=%v remaining=%v r=%v", hint, rem, r)
			}
		}
	}
}

func TestSleepContextReturnsAtOnceWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, admission.SleepContext(ctx, time.Hour), context.Canceled)
	assert.NoError(t, admission.SleepContext(context.Background(), time.Microsecond))
}

// An unbounded stall budget (a call started with NewCall(nil)) must not
// overflow the clamp into a negative nap, which would spin.
func TestNapWithAnUnboundedBudgetIsTheHintPlusJitter(t *testing.T) {
	const forever = time.Duration(1<<63 - 1)
	assert.Equal(t, 3*time.Second+50*time.Millisecond, admission.Nap(3*time.Second, 50*time.Millisecond, forever, 1))
	assert.Equal(t, 25*time.Millisecond, admission.Nap(0, 50*time.Millisecond, forever, 0))
}
