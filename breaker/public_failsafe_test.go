package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
)

// failsafe-go's time-based failure threshold, configured as a failsafe-go
// user would from the package documentation's table, on the public Config
// only: WithFailureThresholdPeriod(2, 200ms) is Policy{Window, WindowFailures,
// WindowMinCalls}; HandleResult(false) is DoResult's verdict; WithDelay is
// the Cooldown (1ms: there is no WithDelay(0)); the half-open phase of the
// failure threshold 2 of 2 is SuccessThreshold 1 of HalfOpenCalls 2.
func TestPublicFailsafeTimeBasedFailureThreshold(t *testing.T) {
	clk := contracttest.NewFakeClock()
	cb, err := breaker.New("fs", breaker.Config{
		Clock: clk,
		Policy: gate.Policy{
			ConsecutiveFailures: gate.Disabled,
			Window:              200 * time.Millisecond, WindowFailures: 2, WindowMinCalls: 2,
			Cooldown: time.Millisecond, CooldownMultiplier: 1,
			SuccessThreshold: 1, HalfOpenCalls: 2, HalfOpenProbes: 2,
		},
	})
	require.NoError(t, err)
	get := func(v bool) {
		_, _ = breaker.DoResult(context.Background(), cb, func(context.Context) (bool, error) { return v, nil },
			func(v bool, err error) bool { return err != nil || !v })
	}
	get(false)
	get(true)
	clk.Advance(210 * time.Millisecond) // the results roll off
	get(false)
	get(true)
	clk.Advance(50 * time.Millisecond)
	assert.Equal(t, gate.Closed, cb.State())
	get(false)
	assert.Equal(t, gate.Open, cb.State())
	clk.Advance(time.Millisecond)
	get(false)
	assert.Equal(t, gate.HalfOpen, cb.State())
	get(false)
	assert.Equal(t, gate.Open, cb.State(), "half-open → open")
	clk.Advance(time.Millisecond)
	get(false)
	assert.Equal(t, gate.HalfOpen, cb.State())
	get(true)
	assert.Equal(t, gate.Closed, cb.State(), "half-open → closed")
}

// failsafe-go's OnClose with WithSuccessThresholdRatio(3, 5) after
// HalfOpen(): the listener gets the phase's counts, 2 failures and 3
// successes, through the public conveniences.
func TestPublicFailsafeOnCloseAfterHalfOpen(t *testing.T) {
	cb, err := breaker.New("fs", breaker.Config{
		Policy: gate.Policy{SuccessThreshold: 3, HalfOpenCalls: 5, HalfOpenProbes: 5},
	})
	require.NoError(t, err)
	var closed []breaker.Counts
	cb.OnClose(func(ev breaker.StateChange) { closed = append(closed, ev.Counts) })
	require.NoError(t, cb.HalfOpen())
	record := func(e error) {
		tok, err := cb.Allow(context.Background())
		require.NoError(t, err)
		tok.Done(e)
	}
	record(errDown)
	record(errDown)
	record(nil)
	record(nil)
	assert.Empty(t, closed)
	record(nil)
	if assert.Len(t, closed, 1) {
		assert.Equal(t, uint64(2), closed[0].TotalFailures)
		assert.Equal(t, uint64(3), closed[0].TotalSuccesses)
	}
	assert.Equal(t, gate.Closed, cb.State())
}
