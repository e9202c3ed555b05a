package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// gobreaker's TestGeneration, on the per-generation Counts: outcomes of
// calls admitted before a trip and finished after the close are stale, and
// move neither the new generation's Counts nor the gate.
func TestStaleOutcomesAreNotInTheNewGenerationsCounts(t *testing.T) {
	b, clk := newFakeClockBreaker(t, breaker.Config{Policy: gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second}})
	old1, err := b.Allow(t.Context())
	require.NoError(t, err)
	old2, err := b.Allow(t.Context())
	require.NoError(t, err)
	for range 2 {
		require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
	}
	require.Equal(t, gate.Open, b.State())
	clk.Advance(time.Second)
	require.NoError(t, b.Execute(t.Context(), succeedFn))
	require.Equal(t, gate.Closed, b.State())

	old1.Done(errUpstream)
	old2.Done(errUpstream)
	c := b.Counts()
	assert.Zero(t, c.TotalFailures)
	assert.Zero(t, c.ConsecutiveFailures)
	snap, err := b.Gate().Snapshot(t.Context(), b.Name())
	require.NoError(t, err)
	assert.Zero(t, snap.ConsecutiveFailures, "the gate ignored them too")
	assert.Equal(t, gate.Closed, snap.State)
	assert.Equal(t, uint64(2), b.Metrics().Stale)
}
