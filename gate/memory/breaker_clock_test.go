package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// A clock that stands still or steps back never shortens a wait: an Open
// rejection's RetryAfter is openUntil − now by the clock as it reads, and a
// probe lease lives until its expiry by that clock.
func TestClockStandingStillOrSteppingBack(t *testing.T) {
	clk := contracttest.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: 2 * time.Second}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := t.Context()
	d, _ := b.TryEnter(ctx, "s")
	u, _ := b.Record(ctx, "s", d, gate.Failure)
	require.Equal(t, gate.Open, u.State)

	r1, _ := b.TryEnter(ctx, "s")
	r2, _ := b.TryEnter(ctx, "s")
	assert.Equal(t, time.Second, r1.RetryAfter, "standing still")
	assert.Equal(t, r1.RetryAfter, r2.RetryAfter, "standing still")

	clk.Advance(-500 * time.Millisecond)
	r, _ := b.TryEnter(ctx, "s")
	assert.False(t, r.Allowed)
	assert.Equal(t, 1500*time.Millisecond, r.RetryAfter, "a step back lengthens the wait")
	ra, _ := b.RetryAfter(ctx, []string{"s"})
	assert.Equal(t, 1500*time.Millisecond, ra)

	clk.Advance(1500 * time.Millisecond)
	probe, _ := b.TryEnter(ctx, "s")
	require.True(t, probe.Probe)
	clk.Advance(-10 * time.Second)
	r, _ = b.TryEnter(ctx, "s")
	assert.False(t, r.Allowed)
	assert.Equal(t, gate.HalfOpen, r.State)
	assert.Equal(t, time.Duration(0), r.RetryAfter)
	s, _ := b.Snapshot(ctx, "s")
	assert.Equal(t, 1, s.ProbesInFlight, "the lease is alive by the clock as it reads")
	u, _ = b.Record(ctx, "s", probe, gate.Success)
	assert.True(t, u.Applied)
	assert.Equal(t, gate.Closed, u.State)
}
