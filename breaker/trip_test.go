package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestReadyToTripSeesTheCountsWithTheFailureAndTripsTheGate(t *testing.T) {
	var seen []Counts
	b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: gate.Disabled, Cooldown: time.Second}, Config{
		ReadyToTrip: func(c Counts) bool {
			seen = append(seen, c)
			return c.Executions() >= 3 && c.FailureRate() >= 0.6
		},
	})
	require.NoError(t, b.Execute(t.Context(), succeed))
	require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	assert.Equal(t, gate.Closed, b.State())
	require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	assert.Equal(t, gate.Open, b.State(), "2 of 3 failed")
	require.Len(t, seen, 2, "evaluated on failures only")
	assert.Equal(t, Counts{Requests: 3, TotalSuccesses: 1, TotalFailures: 2, ConsecutiveFailures: 2}, seen[1])
	assert.Equal(t, []gate.Outcome{gate.Success, gate.Failure, gate.Fatal}, l.recorded(), "a trip is recorded as Fatal")
	m := b.Metrics()
	assert.Equal(t, uint64(2), m.Failures, "the tripping call is a failure locally")
	assert.Equal(t, Counts{}, b.Counts(), "the trip starts a new generation")
}

func TestReadyToTripDisablesTheDefaultConsecutiveRuleOnlyWhenLeftZero(t *testing.T) {
	never := func(Counts) bool { return false }
	b, err := New("a", Config{ReadyToTrip: never, Logger: discardLogger()})
	require.NoError(t, err)
	for range 20 {
		_ = b.Execute(t.Context(), fail)
	}
	assert.Equal(t, gate.Closed, b.State(), "the consecutive rule is off")

	b, err = New("b", Config{ReadyToTrip: never, Policy: gate.Policy{ConsecutiveFailures: 2}, Logger: discardLogger()})
	require.NoError(t, err)
	trip(t, b, 2)
}

func TestFailureThresholdOverACountWindow(t *testing.T) {
	// failsafe-go's WithFailureThresholdRatio(2, 3): 2 failures among the
	// last 3 outcomes.
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: gate.Disabled}, Config{FailureThreshold: 2, CountWindow: 3})
	for _, fn := range []func() error{
		func() error { return b.Execute(t.Context(), fail) },
		func() error { return b.Execute(t.Context(), succeed) },
		func() error { return b.Execute(t.Context(), succeed) },
		func() error { return b.Execute(t.Context(), succeed) }, // the failure leaves the window
	} {
		_ = fn()
	}
	c := b.Counts()
	assert.Equal(t, uint64(3), c.TotalSuccesses)
	assert.Equal(t, uint64(0), c.TotalFailures, "the window holds the last 3 outcomes")
	assert.Equal(t, uint64(4), c.Requests)
	_ = b.Execute(t.Context(), fail)
	assert.Equal(t, gate.Closed, b.State())
	_ = b.Execute(t.Context(), fail)
	assert.Equal(t, gate.Open, b.State())
}

func TestIntervalStartsTheClosedCountsAgain(t *testing.T) {
	b, clk, _ := newTestBreaker(t, gate.Policy{}, Config{Interval: 30 * time.Second})
	require.NoError(t, b.Execute(t.Context(), succeed))
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	assert.Equal(t, Counts{Requests: 2, TotalSuccesses: 1, ConsecutiveSuccesses: 1}, b.Counts())
	clk.Advance(30 * time.Second)
	assert.Equal(t, Counts{}, b.Counts())
	tok.Done(nil)
	assert.Equal(t, Counts{}, b.Counts(), "a call from the previous interval is not counted")
	assert.Equal(t, uint64(2), b.Metrics().Successes, "Metrics keep counting")
}

func TestResetCountsDropsCallsInFlight(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{}, Config{})
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	b.ResetCounts()
	tok.Done(errBoom)
	assert.Equal(t, Counts{}, b.Counts())
}

func TestCountsRates(t *testing.T) {
	c := Counts{TotalSuccesses: 3, TotalFailures: 1}
	assert.Equal(t, uint64(4), c.Executions())
	assert.InDelta(t, 0.25, c.FailureRate(), 1e-9)
	assert.InDelta(t, 0.75, c.SuccessRate(), 1e-9)
	assert.Zero(t, Counts{}.FailureRate())
	assert.Zero(t, Counts{}.SuccessRate())
}

func TestNewRejectsBadCountSettings(t *testing.T) {
	_, err := New("x", Config{FailureThreshold: 4, CountWindow: 3, Interval: -time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "FailureThreshold=4 (legal: ≤ CountWindow 3)")
	assert.Contains(t, err.Error(), "Interval=-1s")
	_, err = New("x", Config{FailureThreshold: -1, CountWindow: -2})
	assert.Contains(t, err.Error(), "FailureThreshold=-1")
	assert.Contains(t, err.Error(), "CountWindow=-2")
}
