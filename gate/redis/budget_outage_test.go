package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// During an outage the admission is served by the local fallbacks; a round
// that the spent advertised budget refuses must not take a request of the
// fleet share's RPM there either (a reserved request cannot be given
// back). The test admits as admission.Pick does: AdmitBudget, and when it
// steps aside Acquire then Take.
func TestOutageFallbackSpendsNoRPMOnASpentBudget(t *testing.T) {
	const rpm = 3
	limits := map[string]gate.Limits{"s": {RPM: rpm}}
	r := newOutageRig(t, "budget", limits)
	fq, err := redis.NewFleetQuota(limits, r.pr)
	require.NoError(t, err)
	b, q, bg := r.blackholed(t, redis.FailOpen, fq)
	ctx := t.Context()
	// The last answer said nothing is left for a minute.
	require.NoError(t, bg.Refresh(ctx, "s", gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 60, Remaining: 0, Reset: time.Minute}, Tokens: gate.UnknownWindow}))

	for range 2 * rpm {
		_, _, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 1)
		require.NoError(t, err)
		if !ok {
			d, err := b.TryEnter(ctx, "s")
			require.NoError(t, err)
			require.True(t, d.Allowed)
			var p gate.Permit
			p, qd, err = q.Acquire(ctx, "s", 1)
			require.NoError(t, err)
			if qd.Allowed {
				bd, err := bg.Take(ctx, "s", 1)
				require.NoError(t, err)
				qd = gate.QuotaDecision(bd)
				if !bd.Allowed {
					require.NoError(t, gate.Finish(ctx, q, p, 0))
				}
			}
			if !qd.Allowed {
				_, err = b.Record(ctx, "s", d, gate.Released)
				require.NoError(t, err)
			}
		}
		require.False(t, qd.Allowed)
		assert.Equal(t, gate.LimitAdvertisedRequests, qd.Limit, "refused by the budget, not by the RPM")
	}
	// The share's whole minute is still there.
	for range rpm {
		_, qd, err := fq.Acquire(ctx, "s", 1)
		require.NoError(t, err)
		assert.True(t, qd.Allowed, "the fleet share's RPM was spent by refused rounds")
	}
}
