package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestOpenHoldsUntilClose(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{Cooldown: time.Second}, Config{OnStateChange: []func(StateChange){c.listen}})
	require.NoError(t, b.Execute(t.Context(), succeed))
	require.NoError(t, b.Open())
	assert.Equal(t, []string{"closed→open"}, transitions(c.events()), "delivered before Open returns")
	err := b.Execute(t.Context(), succeed)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, time.Duration(0), oe.RetryAfter, "a hold has no certain end")
	assert.NotContains(t, oe.Error(), "retry after 0s", "the message names no wait it does not know")
	assert.Contains(t, oe.Error(), "no certain time to retry")
	clk.Advance(time.Hour)
	assert.Equal(t, gate.Open, b.State(), "a hold does not end with the cooldown")
	require.ErrorIs(t, b.Execute(t.Context(), succeed), ErrOpen)

	require.NoError(t, b.Close())
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, Counts{}, b.Counts(), "the counts start again")
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, []string{"closed→open", "open→closed"}, transitions(c.events()))
}

func TestCloseResetsATrippedBreaker(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Minute}, Config{})
	trip(t, b, 2)
	require.NoError(t, b.Close())
	require.NoError(t, b.Execute(t.Context(), succeed))
	_ = b.Execute(t.Context(), fail)
	assert.Equal(t, gate.Closed, b.State(), "the policy runs again from a fresh count")
	_ = b.Execute(t.Context(), fail)
	assert.Equal(t, gate.Open, b.State())
}

func TestHalfOpenStartsAProbePhase(t *testing.T) {
	var c collector
	b, _, _ := newTestBreaker(t, gate.Policy{Cooldown: time.Minute}, Config{OnStateChange: []func(StateChange){c.listen}})
	require.NoError(t, b.HalfOpen())
	assert.Equal(t, gate.HalfOpen, b.State())
	tok, err := b.Allow(t.Context())
	require.NoError(t, err)
	assert.True(t, tok.Probe())
	require.ErrorIs(t, b.Execute(t.Context(), succeed), ErrOpen, "one probe at a time")
	tok.Done(nil)
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, []string{"closed→half_open", "half_open→closed"}, transitions(c.events()))

	// From a hold: HalfOpen lifts it, and a failed probe re-opens with
	// the policy's growth.
	require.NoError(t, b.Open())
	require.NoError(t, b.HalfOpen())
	require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	require.Equal(t, gate.Open, b.State())
	var oe *OpenError
	require.ErrorAs(t, b.Execute(t.Context(), succeed), &oe)
	assert.Equal(t, 2*time.Minute, oe.RetryAfter)
}

func TestForceNeedsAForcer(t *testing.T) {
	b, err := New("api", Config{Gate: &scriptGate{}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, f := range []func() error{b.Open, b.Close, b.HalfOpen} {
		err := f()
		require.ErrorIs(t, err, ErrCannotForce)
		assert.Contains(t, err.Error(), `breaker "api"`)
	}
	b2, _, _ := newTestBreaker(t, gate.Policy{}, Config{})
	err = b2.Force(t.Context(), gate.Force(9))
	var fe *gate.ForceError
	require.ErrorAs(t, err, &fe)
}

func TestStateMovesWithTime(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second}, Config{OnStateChange: []func(StateChange){c.listen}})
	trip(t, b, 1)
	clk.Advance(999 * time.Millisecond)
	assert.Equal(t, gate.Open, b.State())
	clk.Advance(time.Millisecond)
	assert.Equal(t, gate.HalfOpen, b.State(), "the next call would probe")
	assert.Equal(t, gate.Open, b.Metrics().State, "the gate moves only at that call")
	assert.Equal(t, []string{"closed→open"}, transitions(c.events()))
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, gate.Closed, b.State())
}

func TestStateReflectsAForceMadeOnTheGate(t *testing.T) {
	var c collector
	b, _, l := newTestBreaker(t, gate.Policy{}, Config{OnStateChange: []func(StateChange){c.listen}})
	require.NoError(t, l.ProviderGate.(gate.Forcer).Force(t.Context(), "api", gate.ForceOpen))
	assert.Equal(t, gate.Open, b.State())
	assert.Equal(t, []string{"closed→open"}, transitions(c.events()), "State observed the change")
	require.NoError(t, l.ProviderGate.(gate.Forcer).Force(t.Context(), "api", gate.ForceClosed))
	assert.Equal(t, gate.Closed, b.State())
}
