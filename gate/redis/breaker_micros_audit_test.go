package redis_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// microsAuditStep is what one breaker answered at one step, without the
// numbers (tokens, generations) the backends draw differently.
type microsAuditStep struct {
	Allowed, Probe bool
	State          gate.State
	RetryAfter     time.Duration
	Cooldown       time.Duration
	OpenUntil      time.Duration // since the test's start; 0 unless Open
	ProbesInFlight int
}

// A policy whose durations have a part finer than a microsecond is legal,
// and the memory and Redis gates must still answer alike: Redis counts in
// the µs of its TIME, so both drop the finer part, and report the same
// effective Policy.
func TestSubMicrosecondPolicyDurationsCountAlikeInMemoryAndRedis(t *testing.T) {
	p := gate.Policy{
		ConsecutiveFailures: 1,
		Cooldown:            time.Second + 500*time.Nanosecond,
		MaxCooldown:         3*time.Second + 900*time.Nanosecond,
		CooldownMultiplier:  2,
		ProbeTTL:            2*time.Second + 700*time.Nanosecond,
	}
	red, clk, _ := miniGate(t, p)
	mem, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	assert.Equal(t, red.Policy(), mem.Policy(), "both backends report one effective policy")
	assert.Equal(t, time.Second, mem.Policy().Cooldown, "the part finer than a µs is dropped")
	assert.Equal(t, 2*time.Second, mem.Policy().ProbeTTL)
	assert.Equal(t, 3*time.Second, mem.Policy().MaxCooldown)

	start := clk.Now()
	ctx := t.Context()
	gates := map[string]gate.ProviderGate{"memory": mem, "redis": red}
	decisions := map[string]gate.Decision{}
	// step runs one operation on both gates and returns each one's answer
	// with its snapshot afterwards.
	step := func(what string, op func(name string, g gate.ProviderGate) microsAuditStep) {
		t.Helper()
		got := map[string]microsAuditStep{}
		for name, g := range gates {
			s := op(name, g)
			snap, err := g.Snapshot(ctx, "a")
			require.NoError(t, err)
			s.Cooldown, s.ProbesInFlight = snap.Cooldown, snap.ProbesInFlight
			if !snap.OpenUntil.IsZero() {
				s.OpenUntil = snap.OpenUntil.Sub(start)
			}
			got[name] = s
		}
		assert.Equal(t, got["memory"], got["redis"], "%s: memory and Redis answer alike", what)
	}
	enter := func(name string, g gate.ProviderGate) microsAuditStep {
		d, err := g.TryEnter(ctx, "a")
		require.NoError(t, err)
		decisions[name] = d
		return microsAuditStep{Allowed: d.Allowed, Probe: d.Probe, State: d.State, RetryAfter: d.RetryAfter}
	}
	fail := func(name string, g gate.ProviderGate) microsAuditStep {
		u, err := g.Record(ctx, "a", decisions[name], gate.Failure)
		require.NoError(t, err)
		return microsAuditStep{Allowed: u.Applied, State: u.State, RetryAfter: u.RetryAfter}
	}

	step("admit", enter)
	require.Equal(t, gate.Closed, decisions["memory"].State, "a closed admission")
	step("trip", fail)
	snap, err := mem.Snapshot(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, time.Second, snap.RetryAfter, "the Open phase is the whole µs cooldown")

	clk.Advance(time.Second - time.Millisecond)
	step("1ms before the cooldown ends", enter)
	assert.False(t, decisions["memory"].Allowed)
	clk.Advance(time.Millisecond)
	step("the cooldown's end", enter)
	require.True(t, decisions["memory"].Probe, "the first TryEnter at openUntil probes")

	clk.Advance(2*time.Second - time.Millisecond)
	step("1ms before the lease expires", enter)
	assert.False(t, decisions["memory"].Allowed, "the lease still stands")
	clk.Advance(time.Millisecond)
	step("the lease's expiry", enter)
	require.True(t, decisions["memory"].Probe, "an expired lease is granted again")

	step("a failed probe grows the cooldown", fail)
	clk.Advance(2 * time.Second)
	step("probe again", enter)
	step("the grown cooldown stops at MaxCooldown", fail)
	snap, err = mem.Snapshot(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, snap.Cooldown)
}

// KeyTTL reports the TTL the scripts actually give a source's keys, in the
// whole milliseconds PEXPIRE takes, also when the policy's durations have a
// finer part: a caller (or a model of the gate) that waits KeyTTL for a
// record to vanish finds it gone, never a millisecond early or late.
func TestKeyTTLIsTheTTLTheKeysGet(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: 100 * time.Millisecond, MaxCooldown: 300 * time.Millisecond,
		ProbeTTL: 394*time.Millisecond + 729*time.Microsecond}
	b, clk, m := miniGate(t, p)
	assert.Equal(t, 789*time.Millisecond, b.KeyTTL(), "2 × ProbeTTL in whole ms")
	ctx := t.Context()
	d, err := b.TryEnter(ctx, "a")
	require.NoError(t, err)
	u, err := b.Record(ctx, "a", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
	rec := b.Keys("a")[0]
	assert.Equal(t, b.KeyTTL(), m.TTL(rec), "the record's TTL is KeyTTL")

	clk.Advance(b.KeyTTL() - time.Millisecond)
	assert.True(t, m.Exists(rec), "still there 1ms before KeyTTL")
	clk.Advance(time.Millisecond)
	assert.False(t, m.Exists(rec), "gone at KeyTTL")
}

// A cooldown of a century or more (a breaker meant to stay open until an
// operator resets it) keeps the source Open on Redis as in memory: the key
// TTL, twice the longest duration, saturates instead of wrapping to a
// negative TTL that would drop the Open record a millisecond later.
func TestACenturyCooldownStaysOpenOnRedisAsInMemory(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: 150 * 365 * 24 * time.Hour}
	trip := func(t *testing.T, g gate.ProviderGate) {
		t.Helper()
		d, err := g.TryEnter(t.Context(), "a")
		require.NoError(t, err)
		u, err := g.Record(t.Context(), "a", d, gate.Failure)
		require.NoError(t, err)
		require.Equal(t, gate.Open, u.State)
	}
	stillOpen := func(t *testing.T, g gate.ProviderGate) {
		t.Helper()
		s, err := g.Snapshot(t.Context(), "a")
		require.NoError(t, err)
		assert.Equal(t, gate.Open, s.State)
		assert.Greater(t, s.RetryAfter, 149*365*24*time.Hour)
	}

	t.Run("miniredis", func(t *testing.T) {
		red, clk, m := miniGate(t, p)
		mem, err := memory.NewBreaker(p, memory.WithClock(clk))
		require.NoError(t, err)
		assert.Greater(t, red.KeyTTL(), 290*365*24*time.Hour, "the longest TTL a Duration holds")
		trip(t, red)
		trip(t, mem)
		assert.Equal(t, red.KeyTTL(), m.TTL(red.Keys("a")[0]))
		clk.Advance(time.Hour)
		stillOpen(t, red)
		stillOpen(t, mem)
	})
	t.Run("redis-server", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		c := realClient(t, srv.Addr)
		red, err := redis.NewBreaker(c, uniqueScope(), p)
		require.NoError(t, err)
		trip(t, red)
		ttl, err := c.PTTL(t.Context(), red.Keys("a")[0]).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 290*365*24*time.Hour, "the server took the saturated TTL")
		time.Sleep(50 * time.Millisecond)
		stillOpen(t, red)
	})
}

// RetryAfter is never negative, also for the longest cooldown a Duration
// holds (Cooldown: math.MaxInt64, "open until reset"): the Redis gate's µs
// that a Duration cannot hold come back as the longest Duration, as the
// memory gate answers, instead of wrapping to a negative one.
func TestTheLongestCooldownNeverAnswersANegativeRetryAfter(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: math.MaxInt64}
	red, clk, _ := miniGate(t, p)
	mem, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	const centuries = 290 * 365 * 24 * time.Hour
	for name, g := range map[string]gate.ProviderGate{"memory": mem, "redis": red} {
		ctx := t.Context()
		d, err := g.TryEnter(ctx, "a")
		require.NoError(t, err)
		u, err := g.Record(ctx, "a", d, gate.Failure)
		require.NoError(t, err)
		require.Equal(t, gate.Open, u.State, name)
		assert.Greater(t, u.RetryAfter, centuries, "%s: Record", name)
		d, err = g.TryEnter(ctx, "a")
		require.NoError(t, err)
		assert.False(t, d.Allowed, name)
		assert.Greater(t, d.RetryAfter, centuries, "%s: TryEnter", name)
		s, err := g.Snapshot(ctx, "a")
		require.NoError(t, err)
		assert.Greater(t, s.RetryAfter, centuries, "%s: Snapshot.RetryAfter", name)
		assert.Greater(t, s.Cooldown, centuries, "%s: Snapshot.Cooldown", name)
		ra, err := g.RetryAfter(ctx, []string{"a", "b"})
		require.NoError(t, err)
		assert.Zero(t, ra, "%s: b is Closed", name)
		ra, err = g.RetryAfter(ctx, []string{"a"})
		require.NoError(t, err)
		assert.Greater(t, ra, centuries, "%s: RetryAfter(sources)", name)
	}
}
