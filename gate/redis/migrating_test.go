package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// migratingSlotRunsEveryScriptWhole drives, while a source's slot is marked
// MIGRATING on its owner (all its keys still there, so the scripts run on
// that node), each operation whose script empties a lease set: Redis deletes
// an emptied set, and a later touch of that key in the same script would make
// the migrating node stop the script half-way ("non local key"), after its
// earlier writes. Every operation must answer normally instead.
func migratingSlotRunsEveryScriptWhole(t *testing.T, cl *testutil.RedisCluster, c goredis.UniversalClient) {
	const probeTTL, lease = 150 * time.Millisecond, 150 * time.Millisecond
	ctx := t.Context()
	scope, src := uniqueScope(), "s"
	policy := gate.Policy{ConsecutiveFailures: 1, Cooldown: 50 * time.Millisecond, ProbeTTL: probeTTL, SuccessThreshold: 1}
	// b's probe leases expire at once, for the case that lets one expire;
	// lb's (the same records) outlive any stall of a loaded machine
	// between taking a lease and its outcome.
	b, err := redis.NewBreaker(c, scope, policy)
	require.NoError(t, err)
	policy.ProbeTTL = time.Minute
	lb, err := redis.NewBreaker(c, scope, policy)
	require.NoError(t, err)
	q, err := redis.NewQuota(c, scope, map[string]gate.Limits{src: {RPM: 100000, MaxInFlight: 1}}, redis.WithLease(lease))
	require.NoError(t, err)

	admin, ids := masterClients(t, cl)
	slot := int64(keySlot(b.Keys(src)[0]))
	owner := slotOwner(t, admin, b.Keys(src)[0])
	other := cl.Addrs[0]
	if other == owner {
		other = cl.Addrs[1]
	}
	// migrating runs f with the slot marked MIGRATING on its owner and
	// IMPORTING on another master, then makes it stable again.
	migrating := func(f func()) {
		t.Helper()
		require.NoError(t, admin[other].Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[owner]).Err())
		require.NoError(t, admin[owner].Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[other]).Err())
		defer func() {
			for _, addr := range []string{owner, other} {
				require.NoError(t, admin[addr].Do(context.WithoutCancel(ctx), "CLUSTER", "SETSLOT", slot, "STABLE").Err())
			}
		}()
		f()
	}
	// probing opens the breaker and waits out its cooldown, then takes the
	// probe lease on b: record and lease set both exist.
	probing := func(b *redis.Breaker) gate.Decision {
		t.Helper()
		d, err := b.TryEnter(ctx, src)
		require.NoError(t, err)
		if d.Allowed && !d.Probe {
			_, err = b.Record(ctx, src, d, gate.Failure)
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool {
			d, err = b.TryEnter(ctx, src)
			require.NoError(t, err)
			return d.Probe
		}, 2*time.Second, 10*time.Millisecond, "no probe lease after the cooldown")
		return d
	}

	t.Run("ProbeSuccessClosesTheBreaker", func(t *testing.T) {
		d := probing(lb)
		migrating(func() {
			u, err := lb.Record(ctx, src, d, gate.Success)
			require.NoError(t, err)
			assert.True(t, u.Applied)
			assert.Equal(t, gate.Closed, u.State)
		})
	})

	t.Run("ProbeFailureReopensTheBreaker", func(t *testing.T) {
		d := probing(lb)
		migrating(func() {
			u, err := lb.Record(ctx, src, d, gate.Failure)
			require.NoError(t, err)
			assert.Equal(t, gate.Open, u.State)
		})
	})

	t.Run("AnExpiredProbeLeaseIsReplaced", func(t *testing.T) {
		old := probing(b)
		time.Sleep(probeTTL + 20*time.Millisecond) // the lease expires
		migrating(func() {
			// Its outcome is a fencing miss, and the next TryEnter prunes
			// it and takes a new lease: the set emptied, then written.
			u, err := b.Record(ctx, src, old, gate.Success)
			require.NoError(t, err)
			assert.False(t, u.Applied, "an expired lease's outcome is a miss")
			d, err := lb.TryEnter(ctx, src)
			require.NoError(t, err)
			assert.True(t, d.Probe, "the expired lease no longer holds the probe")
			_, err = lb.Record(ctx, src, d, gate.Success)
			require.NoError(t, err)
		})
	})

	t.Run("ARunThatEmptiesTheInFlightSet", func(t *testing.T) {
		// Closed admissions whose outcomes arrive once the breaker has
		// tripped and a probe is out: all four keys exist, so the run goes
		// to the owner, and its one removal empties the lease set. Each
		// outcome is a miss; the probe's lease is untouched.
		rq, err := redis.NewQuota(c, scope, map[string]gate.Limits{src: {RPM: 100000, MaxInFlight: 10}}, redis.WithLease(time.Minute))
		require.NoError(t, err)
		var cs []gate.Conclusion
		for i := range 3 {
			d, p, qd, ok, err := rq.Admit(ctx, lb, src, 0)
			require.NoError(t, err)
			require.True(t, ok && d.Allowed && !d.Probe && qd.Allowed)
			cs = append(cs, gate.Conclusion{Source: src, Decision: d, Outcome: []gate.Outcome{gate.Success, gate.Released}[i%2], Permit: p, HasPermit: true, Tokens: -1})
		}
		probe := probing(lb)
		migrating(func() {
			require.True(t, rq.Conclude(ctx, lb, cs))
			for _, k := range cs {
				require.NoError(t, k.Err)
				assert.False(t, k.Update.Applied, "a tripped generation's outcome is a miss")
				assert.Equal(t, gate.HalfOpen, k.Update.State)
			}
		})
		n, err := c.ZCard(ctx, rq.Keys(src)[1]).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "every lease freed")
		s, err := lb.Snapshot(ctx, src)
		require.NoError(t, err)
		assert.Equal(t, 1, s.ProbesInFlight, "the probe's lease is left alone")
		_, err = lb.Record(ctx, src, probe, gate.Success)
		require.NoError(t, err)
	})

	t.Run("AFullInFlightSetOfExpiredLeasesAdmits", func(t *testing.T) {
		p, qd, err := q.Acquire(ctx, src, 0)
		require.NoError(t, err)
		require.True(t, qd.Allowed)
		_ = p // left to expire, as a crashed process leaves it
		time.Sleep(lease + 20*time.Millisecond)
		migrating(func() {
			p, qd, err := q.Acquire(ctx, src, 0)
			require.NoError(t, err)
			assert.True(t, qd.Allowed, "the expired lease no longer takes the slot")
			require.NoError(t, q.Release(ctx, p))
		})
	})
}
