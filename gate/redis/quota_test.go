package redis_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The Redis quota gate passes the quota contract unchanged on miniredis (its
// own clock, exact to the µs) and on a real redis-server (real time).

func TestQuotaContractMiniredis(t *testing.T) {
	contracttest.RunQuota(t, func(t *testing.T, limits map[string]gate.Limits) (gate.QuotaGate, contracttest.Clock) {
		_, clk, c := newMini(t)
		q, err := redis.NewQuota(c, "chat", limits)
		require.NoError(t, err)
		return q, clk
	})
}

func TestQuotaContractRedisServer(t *testing.T) {
	t.Parallel() // mostly real-time sleeping
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	contracttest.RunQuota(t, realQuotas(c))
}

func TestNewQuotaRejectsInvalidArguments(t *testing.T) {
	_, _, c := newMini(t)
	cases := []struct {
		name   string
		client goredis.UniversalClient
		scope  string
		opts   []redis.Option
		arg    string
	}{
		{"NilClient", nil, "chat", nil, "client"},
		{"EmptyScope", c, "", nil, "scope"},
		{"ScopeWithBrace", c, "ch}at", nil, "scope"},
		{"EmptyPrefix", c, "chat", []redis.Option{redis.WithPrefix("")}, "prefix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redis.NewQuota(tc.client, tc.scope, nil, tc.opts...)
			var ae *redis.ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.arg, ae.Name)
		})
	}
	t.Run("InvalidLimits", func(t *testing.T) {
		_, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"a": {RPM: -1, MaxInFlight: -1}})
		var le *gate.LimitsError
		require.ErrorAs(t, err, &le)
		assert.Len(t, le.Problems, 2)
	})
	t.Run("LeaseShorterThanOneMillisecond", func(t *testing.T) {
		_, err := redis.NewQuota(c, "chat", nil, redis.WithLease(time.Microsecond))
		var ae *redis.ArgumentError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "lease", ae.Name)
	})
}

// The quota keys carry the breaker's hash tag {scope:source}: every script of
// a source, breaker or quota, touches one cluster slot.
func TestQuotaKeysShareTheBreakerHashTag(t *testing.T) {
	_, _, c := newMini(t)
	q, err := redis.NewQuota(c, "CHAT", nil, redis.WithPrefix("prod:pgw"))
	require.NoError(t, err)
	b, err := redis.NewBreaker(c, "CHAT", gate.Policy{}, redis.WithPrefix("prod:pgw"))
	require.NoError(t, err)
	assert.Equal(t, []string{"prod:pgw:{chat:eu-1}:quota", "prod:pgw:{chat:eu-1}:inflight"}, q.Keys("eu-1"))
	tag := func(k string) string { return k[strings.Index(k, "{") : strings.Index(k, "}")+1] }
	for _, k := range append(q.Keys("eu-1"), b.Keys("eu-1")...) {
		assert.Equal(t, "{chat:eu-1}", tag(k), k)
	}
}

// A permit that is never released (its process crashed) holds its slot only
// until the lease ends; its late Release then frees nothing, not even the
// slot someone else holds now.
func TestQuotaUnreleasedPermitExpiresAtLease(t *testing.T) {
	_, clk, c := newMini(t)
	q0, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": {MaxInFlight: 1}})
	require.NoError(t, err)
	assert.Equal(t, redis.DefaultLease, q0.Lease())
	q, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": {MaxInFlight: 1}}, redis.WithLease(time.Second))
	require.NoError(t, err)
	ctx := t.Context()

	lost, d, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	clk.Advance(time.Second - time.Microsecond)
	_, d, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the lease is alive until its end")
	assert.Equal(t, gate.LimitInFlight, d.Limit)
	clk.Advance(time.Microsecond)
	now, d, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed, "the lease expired: its slot is free again")

	require.NoError(t, q.Release(ctx, lost))
	_, d, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the expired permit's Release freed nothing")
	require.NoError(t, q.Release(ctx, now))
	_, d, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

// Same on a real redis-server, real time.
func TestQuotaUnreleasedPermitExpiresAtLeaseRedisServer(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	const lease = 200 * time.Millisecond
	const tries = 5
	limits := map[string]gate.Limits{}
	for i := range tries {
		limits[fmt.Sprintf("s%d", i)] = gate.Limits{MaxInFlight: 1}
	}
	q, err := redis.NewQuota(c, uniqueScope(), limits, redis.WithLease(lease))
	require.NoError(t, err)
	ctx := t.Context()
	var src string
	// The second Acquire is refused only if it reaches Redis before the
	// lease ends: a machine that stalls between the two for the whole lease
	// proves nothing, and the pair is tried again on another source.
	for i := 0; ; i++ {
		require.Less(t, i, tries, "the machine never made two Acquires within one lease")
		src = fmt.Sprintf("s%d", i)
		start := time.Now()
		_, d, err := q.Acquire(ctx, src, 0)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		_, d, err = q.Acquire(ctx, src, 0)
		require.NoError(t, err)
		if time.Since(start) >= lease {
			t.Logf("the two Acquires took %v, more than the lease: again", time.Since(start))
			continue
		}
		require.False(t, d.Allowed, "the lease is alive")
		break
	}
	time.Sleep(lease + 50*time.Millisecond) // real time: let the lease run out
	_, d, err := q.Acquire(ctx, src, 0)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "the unreleased lease expired")
}

// Every key gets a TTL: the bucket hash until both buckets are empty plus a
// second, and a minute of slack so that a busy source's hash is not
// refreshed at every write; the lease set two lease lengths plus a second,
// refreshed once less than one lease length is left. A TTL is lengthened
// when the buckets need more, never shortened.
func TestQuotaKeysExpire(t *testing.T) {
	m, clk, c := newMini(t)
	q, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": {RPM: 60, TPM: 6000, MaxInFlight: 2}})
	require.NoError(t, err)
	ctx := t.Context()
	p, d, err := q.Acquire(ctx, "s", 600) // a tenth of TPM: empty after 6s
	require.NoError(t, err)
	require.True(t, d.Allowed)
	keys := q.Keys("s")
	assert.Equal(t, 67*time.Second, m.TTL(keys[0]), "bucket hash TTL")
	assert.Equal(t, 2*redis.DefaultLease+time.Second, m.TTL(keys[1]), "lease set TTL")
	require.NoError(t, q.Settle(ctx, p, 3000)) // half the minute: 31 s needed
	assert.Equal(t, 67*time.Second, m.TTL(keys[0]), "Settle keeps a TTL that is long enough")
	p2, d, err := q.Acquire(ctx, "s", 600)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, 2*redis.DefaultLease+time.Second, m.TTL(keys[1]), "lease set TTL not refreshed")
	require.NoError(t, q.Settle(ctx, p2, 9600)) // capped at two minutes' worth: 121 s needed
	assert.Equal(t, 181*time.Second, m.TTL(keys[0]), "Settle lengthens the TTL")
	clk.Advance(181 * time.Second)
	assert.False(t, m.Exists(keys[0]), "bucket hash gone once empty")
	require.NoError(t, q.Release(ctx, p))
	require.NoError(t, q.Release(ctx, p2))
	assert.False(t, m.Exists(keys[1]), "lease set gone with its last lease")
	_, d, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed, "%+v", d)
	assert.Equal(t, 2*redis.DefaultLease+time.Second, m.TTL(keys[1]), "a new lease set gets its TTL")
	clk.Advance(2*redis.DefaultLease + time.Second)
	assert.False(t, m.Exists(keys[1]), "lease set gone")
}

// Unlimited sources, settles without TPM and releases without a lease send
// nothing to Redis; every other operation is one round trip.
func TestQuotaOneRoundTripPerOperation(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	q, err := redis.NewQuota(c, uniqueScope(), map[string]gate.Limits{
		"all":  {RPM: 600, TPM: 60_000, MaxInFlight: 1},
		"rpm":  {RPM: 600},
		"free": {},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, q.Preload(ctx))
	rt := &roundTrips{}
	c.AddHook(rt)
	trips := func(what string, want int64) {
		t.Helper()
		got, _ := rt.take()
		assert.Equal(t, want, got, "%s: round trips", what)
	}

	p, d, err := q.Acquire(ctx, "all", 100)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	trips("Acquire granted", 1)
	_, d, err = q.Acquire(ctx, "all", 100)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	trips("Acquire rejected", 1)
	require.NoError(t, q.Settle(ctx, p, 50))
	trips("Settle", 1)
	require.NoError(t, q.Settle(ctx, p, 100))
	trips("Settle equal to the estimate", 0)
	require.NoError(t, q.Release(ctx, p))
	trips("Release", 1)
	require.NoError(t, q.Release(ctx, p))
	trips("Release again", 1)

	p, d, err = q.Acquire(ctx, "all", 100)
	require.NoError(t, err)
	require.True(t, d.Allowed, "the slot is free again")
	trips("Acquire granted", 1)
	require.NoError(t, q.Finish(ctx, p, 40))
	trips("Finish: Settle and Release in one script", 1)
	p, _, err = q.Acquire(ctx, "all", 100)
	require.NoError(t, err)
	trips("Acquire granted", 1)
	require.NoError(t, q.Finish(ctx, p, 100))
	trips("Finish equal to the estimate: Release alone", 1)

	p, _, err = q.Acquire(ctx, "rpm", 100)
	require.NoError(t, err)
	trips("Acquire RPM only", 1)
	require.NoError(t, q.Settle(ctx, p, 10))
	require.NoError(t, q.Release(ctx, p))
	trips("Settle and Release without TPM or lease", 0)
	for _, src := range []string{"free", "unknown"} {
		p, _, err = q.Acquire(ctx, src, 1<<40)
		require.NoError(t, err)
		require.NoError(t, q.Settle(ctx, p, 1))
		require.NoError(t, q.Release(ctx, p))
		trips("unlimited source "+src, 0)
	}
	_, _, err = q.Acquire(ctx, "all", -1)
	require.Error(t, err)
	trips("Acquire with a bad estimate", 0)
}

// A Redis that cannot be reached is reported as ErrUnreachable by every
// operation that needs it.
func TestQuotaRedisDownIsErrUnreachable(t *testing.T) {
	m, _, _ := newMini(t)
	// No retries: an outage is reported at once, not after go-redis's backoff.
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	q, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": {TPM: 1000, MaxInFlight: 1}})
	require.NoError(t, err)
	ctx := t.Context()
	p, _, err := q.Acquire(ctx, "s", 10)
	require.NoError(t, err)
	m.Close()
	_, _, err = q.Acquire(ctx, "s", 10)
	assert.True(t, errors.Is(err, redis.ErrUnreachable), "Acquire: %v", err)
	assert.True(t, errors.Is(q.Settle(ctx, p, 5), redis.ErrUnreachable), "Settle")
	assert.True(t, errors.Is(q.Release(ctx, p), redis.ErrUnreachable), "Release")
}

// A source's limit changed between deploys counts what was already spent in
// the rolling minute against the new limit: the stored level, in the old
// limit's units, is converted to the new one's on the next script (RPM on
// Acquire and Admit, TPM on Settle), capped at one extra minute's allowance.
// miniredis's clock stands still, so nothing drains and the counts are exact.
func TestAChangedLimitCountsWhatWasAlreadySpent(t *testing.T) {
	ctx := t.Context()
	take := func(t *testing.T, acquire func() (gate.QuotaDecision, error)) int {
		t.Helper()
		for n := 0; n < 1000; n++ {
			qd, err := acquire()
			require.NoError(t, err)
			if !qd.Allowed {
				return n
			}
		}
		t.Fatal("never rejected")
		return 0
	}
	quota := func(t *testing.T, c goredis.UniversalClient, l gate.Limits) *redis.Quota {
		t.Helper()
		q, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": l})
		require.NoError(t, err)
		return q
	}
	t.Run("RPMOnAcquire", func(t *testing.T) {
		_, _, c := newMini(t)
		q60, q120 := quota(t, c, gate.Limits{RPM: 60}), quota(t, c, gate.Limits{RPM: 120})
		acquire := func(q *redis.Quota) func() (gate.QuotaDecision, error) {
			return func() (gate.QuotaDecision, error) { _, qd, err := q.Acquire(ctx, "s", 0); return qd, err }
		}
		for range 30 {
			_, qd, err := q60.Acquire(ctx, "s", 0)
			require.NoError(t, err)
			require.True(t, qd.Allowed)
		}
		assert.Equal(t, 90, take(t, acquire(q120)), "30 spent under 60 leave 90 of 120")
		_, qd, err := q60.Acquire(ctx, "s", 0)
		require.NoError(t, err)
		assert.False(t, qd.Allowed, "120 spent are over 60")
		assert.Equal(t, gate.LimitRPM, qd.Limit)
		assert.Greater(t, qd.RetryAfter, time.Minute, "the overdraft beyond 60 (capped at a second minute's) drains first")
	})
	t.Run("RPMOnAdmit", func(t *testing.T) {
		_, _, c := newMini(t)
		b, err := redis.NewBreaker(c, "chat", gate.Policy{})
		require.NoError(t, err)
		q10, q40 := quota(t, c, gate.Limits{RPM: 10, MaxInFlight: 1000}), quota(t, c, gate.Limits{RPM: 40, MaxInFlight: 1000})
		admit := func(q *redis.Quota) func() (gate.QuotaDecision, error) {
			return func() (gate.QuotaDecision, error) {
				d, _, qd, ok, err := q.Admit(ctx, b, "s", 0)
				require.True(t, ok)
				require.True(t, err != nil || d.Allowed, "the breaker admits")
				return qd, err
			}
		}
		assert.Equal(t, 10, take(t, admit(q10)))
		assert.Equal(t, 30, take(t, admit(q40)), "10 spent under 10 leave 30 of 40")
	})
	t.Run("TPMOnSettle", func(t *testing.T) {
		_, _, c := newMini(t)
		q100, q200 := quota(t, c, gate.Limits{TPM: 100}), quota(t, c, gate.Limits{TPM: 200})
		p, qd, err := q100.Acquire(ctx, "s", 50)
		require.NoError(t, err)
		require.True(t, qd.Allowed)
		require.NoError(t, q200.Settle(ctx, p, 50), "no correction: only the rescaling")
		_, qd, err = q200.Acquire(ctx, "s", 150)
		require.NoError(t, err)
		assert.True(t, qd.Allowed, "50 spent under 100 leave 150 of 200")
		_, qd, err = q200.Acquire(ctx, "s", 1)
		require.NoError(t, err)
		assert.False(t, qd.Allowed)
		assert.Equal(t, gate.LimitTPM, qd.Limit)
	})
}
