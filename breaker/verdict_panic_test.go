package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// A classifier of the caller's (IsSuccessful, IsExcluded, DoResult's
// verdict) that panics while a probe's outcome is classified must not keep
// the probe lease: the panic goes on with its value, the call is in
// Metrics, and the next caller probes at once, long before the hour-long
// ProbeTTL.
func TestPanickingVerdictGivesBackTheProbe(t *testing.T) {
	policy := gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: time.Hour}
	bug := func(error) bool { panic("verdict bug") }
	cases := []struct {
		name string
		cfg  breaker.Config
		call func(context.Context, *breaker.Breaker)
	}{
		{"Execute with IsSuccessful", breaker.Config{IsSuccessful: bug}, func(ctx context.Context, b *breaker.Breaker) {
			_ = b.Execute(ctx, succeedFn)
		}},
		{"Execute with IsExcluded", breaker.Config{IsExcluded: bug}, func(ctx context.Context, b *breaker.Breaker) {
			_ = b.Execute(ctx, fail503)
		}},
		{"DoResult", breaker.Config{}, func(ctx context.Context, b *breaker.Breaker) {
			_, _ = breaker.DoResult(ctx, b, func(context.Context) (int, error) { return 1, nil },
				func(int, error) bool { panic("verdict bug") })
		}},
		{"Allow and Done with IsSuccessful", breaker.Config{IsSuccessful: bug}, func(ctx context.Context, b *breaker.Breaker) {
			tok, err := b.Allow(ctx)
			if err != nil {
				panic(err)
			}
			tok.Done(nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Policy = policy
			b, clk := newFakeClockBreaker(t, tc.cfg)
			require.NoError(t, b.Force(t.Context(), gate.ForceOpen))
			require.NoError(t, b.HalfOpen())
			clk.Advance(time.Second)
			require.PanicsWithValue(t, "verdict bug", func() { tc.call(t.Context(), b) })
			m := b.Metrics()
			assert.Equal(t, m.Successes+m.Failures+m.Excluded+m.Cancelled+m.Rejections+m.GateErrors+m.Stale, m.TotalCalls,
				"the call is in Metrics")
			assert.Equal(t, uint64(1), m.TotalCalls)

			// The lease was given back: the next caller is a probe.
			tok, err := b.Allow(t.Context())
			require.NoError(t, err, "the probe lease is free again")
			assert.True(t, tok.Probe())
		})
	}
}

// A ReadyToTrip that panics on a failure still lets the failure reach the
// gate and Metrics, then the panic goes on with its value.
func TestPanickingReadyToTripStillRecordsTheFailure(t *testing.T) {
	b, _ := newFakeClockBreaker(t, breaker.Config{ReadyToTrip: func(breaker.Counts) bool { panic("trip bug") }})
	require.PanicsWithValue(t, "trip bug", func() { _ = b.Execute(t.Context(), fail503) })
	m := b.Metrics()
	assert.Equal(t, uint64(1), m.Failures)
	assert.Equal(t, uint64(1), m.TotalCalls)
	snap, err := b.Gate().Snapshot(t.Context(), b.Name())
	require.NoError(t, err)
	assert.Equal(t, 1, snap.ConsecutiveFailures, "the gate was told of the failure")
	assert.Equal(t, gate.Closed, snap.State, "a panicking predicate trips nothing")
	assert.Equal(t, uint64(1), b.Counts().TotalFailures)
}
