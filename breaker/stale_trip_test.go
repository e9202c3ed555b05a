package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// Two breakers of one name on one gate are two processes sharing a Redis
// gate. A call of A admitted before B tripped the gate and B's probe closed
// it again is stale: its failure must not trip the fresh Closed record
// through A's ReadyToTrip.
func TestStaleFailureDoesNotTripASharedGateThroughReadyToTrip(t *testing.T) {
	clk := contracttest.NewFakeClock()
	g, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second, CooldownMultiplier: 1}, memory.WithClock(clk))
	require.NoError(t, err)
	a, err := breaker.New("shared", breaker.Config{Gate: g, FailureThreshold: 2, Logger: quiet()})
	require.NoError(t, err)
	bb, err := breaker.New("shared", breaker.Config{Gate: g, Logger: quiet()})
	require.NoError(t, err)

	require.ErrorIs(t, a.Execute(t.Context(), fail503), errUpstream)
	old, err := a.Allow(t.Context())
	require.NoError(t, err)

	// B resets the shared consecutive count, then trips the gate, then
	// probes it closed.
	require.NoError(t, bb.Execute(t.Context(), succeedFn))
	require.ErrorIs(t, bb.Execute(t.Context(), fail503), errUpstream)
	require.ErrorIs(t, bb.Execute(t.Context(), fail503), errUpstream)
	require.Equal(t, gate.Open, bb.State())
	clk.Advance(time.Second)
	require.NoError(t, bb.Execute(t.Context(), succeedFn))
	require.Equal(t, gate.Closed, bb.State())
	closed, err := g.Snapshot(t.Context(), "shared")
	require.NoError(t, err)

	old.Done(errUpstream) // admitted in the generation before the trip
	snap, err := g.Snapshot(t.Context(), "shared")
	require.NoError(t, err)
	assert.Equal(t, gate.Closed, snap.State, "a stale failure must not trip the shared gate")
	assert.Equal(t, closed.Generation, snap.Generation, "a stale outcome changes nothing")
	assert.Equal(t, uint64(1), a.Metrics().Stale)
}
