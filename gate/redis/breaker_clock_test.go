package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A server clock that stands still or steps back never shortens a wait, as
// in gate/memory: RetryAfter is openUntil − now by the server's TIME, and a
// probe lease lives until its expiry by that clock.
func TestServerClockStandingStillOrSteppingBack(t *testing.T) {
	b, _, m := miniGate(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: 2 * time.Second})
	ctx := t.Context()
	now := testutil.Epoch
	m.SetTime(now)
	d, _ := b.TryEnter(ctx, "s")
	u, _ := b.Record(ctx, "s", d, gate.Failure)
	require.Equal(t, gate.Open, u.State)

	r1, _ := b.TryEnter(ctx, "s")
	r2, _ := b.TryEnter(ctx, "s")
	assert.Equal(t, time.Second, r1.RetryAfter, "standing still")
	assert.Equal(t, r1.RetryAfter, r2.RetryAfter, "standing still")

	m.SetTime(now.Add(-500 * time.Millisecond))
	r, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	assert.False(t, r.Allowed)
	assert.Equal(t, 1500*time.Millisecond, r.RetryAfter, "a step back lengthens the wait")
	ra, _ := b.RetryAfter(ctx, []string{"s"})
	assert.Equal(t, 1500*time.Millisecond, ra)

	m.SetTime(now.Add(time.Second))
	probe, _ := b.TryEnter(ctx, "s")
	require.True(t, probe.Probe)
	m.SetTime(now.Add(-9 * time.Second))
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
