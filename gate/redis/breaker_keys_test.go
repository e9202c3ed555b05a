package redis_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// allKeysExpire asserts that every key on m has a TTL.
func allKeysExpire(t *testing.T, m *miniredis.Miniredis, what string) {
	t.Helper()
	for _, k := range m.Keys() {
		assert.Greater(t, m.TTL(k), time.Duration(0), "%s: key %s has no TTL", what, k)
	}
}

// A source that only ever succeeds writes nothing: an idle Closed breaker
// leaves no keys.
func TestClosedSuccessesLeaveNoKeys(t *testing.T) {
	b, _, m := miniGate(t, gate.Policy{})
	ctx := t.Context()
	for range 3 {
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		for _, o := range []gate.Outcome{gate.Success, gate.Released} {
			_, err = b.Record(ctx, "s", d, o)
			require.NoError(t, err)
		}
	}
	_, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	_, err = b.RetryAfter(ctx, []string{"s", "t"})
	require.NoError(t, err)
	assert.Empty(t, m.Keys())
}

// Every key any step of a breaker's life writes carries a TTL, window
// included, and the keys are gone once idle for the TTL.
func TestEveryBreakerKeyExpires(t *testing.T) {
	p := gate.Policy{
		ConsecutiveFailures: 2, Cooldown: time.Second, MaxCooldown: 4 * time.Second, ProbeTTL: 2 * time.Second,
		SuccessThreshold: 2, HalfOpenProbes: 2, Window: time.Second, WindowMinCalls: 10, WindowFailureRate: 0.9,
	}
	b, clk, m := miniGate(t, p)
	ctx := t.Context()
	enter := func() gate.Decision {
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		return d
	}
	record := func(d gate.Decision, o gate.Outcome) gate.Update {
		u, err := b.Record(ctx, "s", d, o)
		require.NoError(t, err)
		allKeysExpire(t, m, "after "+o.String())
		return u
	}
	record(enter(), gate.Success) // a window outcome: the record exists now
	require.NotEmpty(t, m.Keys())
	record(enter(), gate.Failure)
	require.Equal(t, gate.Open, record(enter(), gate.Failure).State)
	clk.Advance(time.Second)
	p1, p2 := enter(), enter()
	require.True(t, p1.Probe && p2.Probe)
	allKeysExpire(t, m, "after two probe grants")
	record(p1, gate.Success)
	record(p2, gate.Released)
	p3 := enter()
	require.Equal(t, gate.Closed, record(p3, gate.Success).State)
	require.Equal(t, gate.Open, record(enter(), gate.Fatal).State)
	clk.Advance(b.KeyTTL())
	assert.Empty(t, m.Keys(), "an abandoned source's keys vanish")
}

// Keys deleted under a call in flight (an operator's DEL, an eviction) make
// its outcome a miss and leave a working, expiring record.
func TestRecordDeletedMidFlight(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second, ProbeTTL: 2 * time.Second}
	ctx := t.Context()

	t.Run("RecordHashUnderAProbe", func(t *testing.T) {
		b, clk, m := miniGate(t, p)
		keys := b.Keys("s")
		d, _ := b.TryEnter(ctx, "s")
		_, _ = b.Record(ctx, "s", d, gate.Failure)
		clk.Advance(time.Second)
		probe, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, probe.Probe)
		m.Del(keys[0])
		u, err := b.Record(ctx, "s", probe, gate.Success)
		require.NoError(t, err)
		assert.False(t, u.Applied, "the probe's record is gone: a miss")
		assert.Equal(t, gate.Closed, u.State)
		// The forgotten record trips again and its next phase fences the
		// old probe's token.
		d, err = b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		u, err = b.Record(ctx, "s", d, gate.Failure)
		require.NoError(t, err)
		require.Equal(t, gate.Open, u.State)
		allKeysExpire(t, m, "after the re-trip")
		assert.False(t, m.Exists(keys[1]), "opening drops the old lease set")
	})

	t.Run("LeaseSetUnderAProbe", func(t *testing.T) {
		b, clk, m := miniGate(t, p)
		keys := b.Keys("s")
		d, _ := b.TryEnter(ctx, "s")
		_, _ = b.Record(ctx, "s", d, gate.Failure)
		clk.Advance(time.Second)
		probe, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, probe.Probe)
		m.Del(keys[1])
		u, err := b.Record(ctx, "s", probe, gate.Success)
		require.NoError(t, err)
		assert.False(t, u.Applied, "the lease is gone: a miss")
		assert.Equal(t, gate.HalfOpen, u.State)
		next, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, next.Probe, "the slot is free again")
		assert.NotEqual(t, probe.Token, next.Token)
		u, err = b.Record(ctx, "s", next, gate.Success)
		require.NoError(t, err)
		assert.True(t, u.Applied)
		assert.Equal(t, gate.Closed, u.State)
		allKeysExpire(t, m, "after closing")
	})

	t.Run("RecordHashWhileOpen", func(t *testing.T) {
		b, _, m := miniGate(t, p)
		d, _ := b.TryEnter(ctx, "s")
		u, _ := b.Record(ctx, "s", d, gate.Failure)
		require.Equal(t, gate.Open, u.State)
		m.Del(b.Keys("s")[0])
		ra, err := b.RetryAfter(ctx, []string{"s"})
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), ra)
		d, err = b.TryEnter(ctx, "s")
		require.NoError(t, err)
		assert.True(t, d.Allowed, "a forgotten record reads as a fresh Closed one")
		s, err := b.Snapshot(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, gate.Snapshot{State: gate.Closed, Cooldown: time.Second}, s)
	})
}
