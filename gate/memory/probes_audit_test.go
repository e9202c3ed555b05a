package memory_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

// HalfOpenProbes has no upper bound in Policy: math.MaxInt ("any number
// of probes at once") is legal, and the memory gate must serve it without
// reserving room for that many leases when it first meets a source.
func TestUnboundedHalfOpenProbesIsServed(t *testing.T) {
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, HalfOpenProbes: math.MaxInt}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := t.Context()
	d, err := b.TryEnter(ctx, "a")
	require.NoError(t, err)
	u, err := b.Record(ctx, "a", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
	clk.Advance(b.Policy().Cooldown)
	for i := range 100 {
		d, err := b.TryEnter(ctx, "a")
		require.NoError(t, err)
		require.True(t, d.Probe, "probe %d", i)
	}
	s, err := b.Snapshot(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, 100, s.ProbesInFlight)
}
