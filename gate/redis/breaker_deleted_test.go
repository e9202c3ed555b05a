package redis_test

import (
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// deletedRig is one breaker on a server whose keys a test deletes, with the
// way that server's record gets from Open to HalfOpen and the clock's step
// between the deletion and the record's next use.
type deletedRig struct {
	b *redis.Breaker
	c goredis.UniversalClient
	// halfOpen takes a freshly tripped record to HalfOpen.
	halfOpen func(t *testing.T)
	// later lets the server's clock move on after the deletion (miniredis's
	// stands still unless told).
	later func()
}

var deletedPolicy = gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: time.Hour}

// deletedRigs are the real redis-server, where the record reaches HalfOpen
// through an operator's Force (no waiting for a real cooldown), and
// miniredis, where it does through the cooldown on the server's own clock.
func deletedRigs() map[string]func(t *testing.T) deletedRig {
	return map[string]func(t *testing.T) deletedRig{
		"Real": func(t *testing.T) deletedRig {
			srv := testutil.StartRedis(t)
			c := realClient(t, srv.Addr)
			b, err := redis.NewBreaker(c, uniqueScope(), deletedPolicy)
			require.NoError(t, err)
			return deletedRig{
				b: b, c: c, later: func() {},
				halfOpen: func(t *testing.T) { require.NoError(t, b.Force(t.Context(), "s", gate.ForceHalfOpen)) },
			}
		},
		"Mini": func(t *testing.T) deletedRig {
			_, clk, c := newMini(t)
			b, err := redis.NewBreaker(c, "chat", deletedPolicy)
			require.NoError(t, err)
			return deletedRig{
				b: b, c: c, later: func() { clk.Advance(time.Millisecond) },
				halfOpen: func(*testing.T) { clk.Advance(deletedPolicy.Cooldown) },
			}
		},
	}
}

// A record built again after the source's keys were deleted (FLUSHALL,
// eviction under maxmemory, an operator's DEL) hands out no generation and
// no probe token the deleted one handed out: a probe granted before the
// deletion is stale for the new record, so its Success does not close a
// breaker another caller is probing now and its Released does not free that
// caller's lease; nor does a Closed admission from before count against the
// new record.
func TestARecordBuiltAgainAfterItsKeysWereDeletedRepeatsNoNumber(t *testing.T) {
	for name, rig := range deletedRigs() {
		t.Run(name, func(t *testing.T) {
			r := rig(t)
			ctx := t.Context()
			var numbers []uint64 // every generation and token, in the order handed out
			note := func(g ...uint64) {
				numbers = append(numbers, g...)
			}
			enter := func() gate.Decision {
				t.Helper()
				d, err := r.b.TryEnter(ctx, "s")
				require.NoError(t, err)
				require.True(t, d.Allowed, "%+v", d)
				note(d.Generation, d.Token)
				return d
			}
			record := func(d gate.Decision, o gate.Outcome) gate.Update {
				t.Helper()
				u, err := r.b.Record(ctx, "s", d, o)
				require.NoError(t, err)
				note(u.Generation)
				return u
			}
			// probe trips the Closed record and takes a probe of the
			// HalfOpen phase that follows.
			probe := func() gate.Decision {
				t.Helper()
				require.Equal(t, gate.Open, record(enter(), gate.Failure).State)
				r.halfOpen(t)
				d := enter()
				require.True(t, d.Probe, "%+v", d)
				return d
			}
			// deleted deletes the source's keys, lets the server's clock move
			// on, and returns the numbers handed out before.
			deleted := func() []uint64 {
				t.Helper()
				require.NoError(t, r.c.Del(ctx, r.b.Keys("s")...).Err())
				r.later()
				before := numbers
				numbers = nil
				return before
			}
			// above asserts that every number handed out since the deletion is
			// above every one handed out before it. 0 is the generation of a
			// record that does not exist yet (a fresh Closed one, before its
			// first transition) on either side.
			above := func(before []uint64) {
				t.Helper()
				t.Logf("before the deletion %v, after %v", before, numbers)
				last := slices.Max(before)
				var notAbove []uint64
				for _, n := range numbers {
					if n != 0 && n <= last {
						notAbove = append(notAbove, n)
					}
				}
				assert.Empty(t, notAbove, "numbers of the new record not above the deleted one's last, %d", last)
			}

			// The same steps on either side of the deletion: a counter that
			// started again would hand the new probe the stale one's token.
			staleProbe := probe()
			before := deleted()
			currentProbe := probe()
			for _, o := range []gate.Outcome{gate.Released, gate.Success} {
				u := record(staleProbe, o)
				assert.False(t, u.Applied, "the stale probe's %v was applied to the new record", o)
				s, err := r.b.Snapshot(ctx, "s")
				require.NoError(t, err)
				assert.Equal(t, gate.HalfOpen, s.State, "after the stale %v: the new record's probe is in flight", o)
				assert.Equal(t, 1, s.ProbesInFlight, "after the stale %v: the current probe's lease", o)
			}
			require.True(t, record(currentProbe, gate.Success).Applied, "the current probe concludes its phase")
			staleClosed := enter()
			require.Equal(t, gate.Closed, staleClosed.State)
			above(before)

			// And a Closed generation after a deletion is not one from before.
			before = deleted()
			require.Equal(t, gate.Closed, record(probe(), gate.Success).State)
			require.Equal(t, gate.Closed, enter().State)
			assert.Equal(t, gate.Closed, record(staleClosed, gate.Failure).State,
				"a Closed admission from before the deletion tripped the new record")
			above(before)
		})
	}
}

// A record that comes back older than it was — a write the replica promoted
// by a failover never received, which the replica's record lacks — numbers
// on from the server's clock, not from its stale counter: a probe granted by
// the lost write is stale for the probe granted after.
func TestARecordThatLostAWriteRepeatsNoNumber(t *testing.T) {
	for name, rig := range deletedRigs() {
		t.Run(name, func(t *testing.T) {
			r := rig(t)
			ctx := t.Context()
			enter := func() gate.Decision {
				t.Helper()
				d, err := r.b.TryEnter(ctx, "s")
				require.NoError(t, err)
				require.True(t, d.Allowed, "%+v", d)
				return d
			}
			d := enter()
			u, err := r.b.Record(ctx, "s", d, gate.Failure)
			require.NoError(t, err)
			require.Equal(t, gate.Open, u.State)
			r.halfOpen(t)

			// What the replica has: the record before the probe's grant.
			keys := r.b.Keys("s")
			fields, err := r.c.HGetAll(ctx, keys[0]).Result()
			require.NoError(t, err)
			require.NotEmpty(t, fields)
			stale := enter()
			require.True(t, stale.Probe, "%+v", stale)
			require.NoError(t, r.c.Del(ctx, keys...).Err())
			require.NoError(t, r.c.HSet(ctx, keys[0], fields).Err())
			r.later()

			current := enter()
			require.True(t, current.Probe, "%+v", current)
			t.Logf("lost probe %+v, probe after %+v", stale, current)
			assert.NotEqual(t, stale.Token, current.Token, "the probe after the lost write got the lost probe's token")
			u, err = r.b.Record(ctx, "s", stale, gate.Released)
			require.NoError(t, err)
			assert.False(t, u.Applied, "the lost probe's Released freed the current probe's lease")
			s, err := r.b.Snapshot(ctx, "s")
			require.NoError(t, err)
			assert.Equal(t, 1, s.ProbesInFlight, "the current probe's lease")
		})
	}
}
