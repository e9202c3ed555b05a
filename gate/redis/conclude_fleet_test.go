package redis_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// An outage that starts between the breaker's decision (taken in Redis)
// and the quota's permit (taken from the fleet-share fallback) and ends
// before the outcome is written leaves a conclusion that mixes the two: its
// permit must go back to the fleet share that granted it, not to Redis, or
// the local in-flight slot is never freed and Redis's token account is
// corrected for a reservation it never made.
func TestConcludeSendsAFleetPermitBackToTheFleetShare(t *testing.T) {
	limits := map[string]gate.Limits{"s": {MaxInFlight: 2, TPM: 1000}}
	r := newOutageRig(t, "mixed", limits)
	px, pr, rb, rq, mb := r.px, r.pr, r.rb, r.rq, r.mb
	fq, err := redis.NewFleetQuota(limits, pr)
	require.NoError(t, err)
	b, err := redis.NewFailover(rb, mb, redis.FailOpen, slog.New(&logSink{}), redis.WithProber(pr))
	require.NoError(t, err)
	q, err := redis.NewQuotaFailover(rq, fq, redis.FailOpen, slog.New(&logSink{}), redis.WithProber(pr))
	require.NoError(t, err)
	ctx := t.Context()
	require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 1 && !pr.Down() }))

	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.False(t, b.LocalDecision(d), "decided by redis")

	px.SetMode(testutil.ProxyBlackhole)
	require.True(t, waitFor(5*time.Second, pr.Down), "the prober must see the black hole")
	p, qd, err := q.Acquire(ctx, "s", 100)
	require.NoError(t, err)
	require.True(t, qd.Allowed)
	require.True(t, q.LocalPermit(p), "granted by the fleet share")
	require.Equal(t, 1, fq.InFlight("s"))

	px.SetMode(testutil.ProxyForward)
	require.True(t, waitFor(5*time.Second, func() bool { return !pr.Down() }), "the prober must see redis again")

	// What the outcome writer does: Conclude, or Record and Finish when
	// Conclude steps aside.
	cs := []gate.Conclusion{{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: 10}}
	if q.Conclude(ctx, b, cs) {
		require.NoError(t, cs[0].Err)
	} else {
		_, err := b.Record(ctx, "s", d, gate.Success)
		require.NoError(t, err)
		require.NoError(t, gate.Finish(ctx, q, p, 10))
	}
	assert.Zero(t, fq.InFlight("s"), "the fleet share's slot is given back")
}
