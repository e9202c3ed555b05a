package memory_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

func TestNewBreakerRejectsInvalidPolicy(t *testing.T) {
	_, err := memory.NewBreaker(gate.Policy{Cooldown: -time.Second, HalfOpenProbes: -1})
	var pe *gate.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Len(t, pe.Problems, 2)
	assert.Contains(t, err.Error(), "Cooldown=-1s")
	assert.Contains(t, err.Error(), "HalfOpenProbes=-1")
}

func TestZeroPolicyMeansDefaults(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	p := b.Policy()
	assert.Equal(t, gate.DefaultConsecutiveFailures, p.ConsecutiveFailures)
	assert.Equal(t, gate.DefaultCooldown, p.Cooldown)
	assert.Equal(t, gate.DefaultMaxCooldown, p.MaxCooldown)
	assert.Equal(t, 2.0, p.CooldownMultiplier)
	assert.Equal(t, 1, p.HalfOpenProbes)
	assert.Equal(t, 1, p.SuccessThreshold)
}

func TestClosedSuccessPathAllocatesNothing(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	ctx := context.Background()
	_, _ = b.TryEnter(ctx, "s") // first sight of a source allocates its record
	allocs := testing.AllocsPerRun(1000, func() {
		d, _ := b.TryEnter(ctx, "s")
		_, _ = b.Record(ctx, "s", d, gate.Success)
	})
	assert.Zero(t, allocs)
}

// The failure-rate window forgets outcomes older than ten buckets.
func TestWindowForgetsOldFailures(t *testing.T) {
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{
		ConsecutiveFailures: 100, Window: time.Second, WindowMinCalls: 4, WindowFailureRate: 0.5,
	}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := context.Background()
	run := func(o gate.Outcome) gate.Update {
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		u, err := b.Record(ctx, "s", d, o)
		require.NoError(t, err)
		return u
	}
	run(gate.Failure)
	run(gate.Failure)
	clk.Advance(1100 * time.Millisecond) // both failures leave the window
	run(gate.Success)
	run(gate.Success)
	run(gate.Success)
	assert.Equal(t, gate.Closed, run(gate.Failure).State, "1 of 4 failed: below the rate")
	assert.Equal(t, gate.Closed, run(gate.Failure).State, "2 of 5 failed: below the rate")
	assert.Equal(t, gate.Open, run(gate.Failure).State, "3 of 6 failed: at the rate")
}

func BenchmarkClosedSuccess(b *testing.B) {
	g, err := memory.NewBreaker(gate.Policy{})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, _ := g.TryEnter(ctx, "s")
		_, _ = g.Record(ctx, "s", d, gate.Success)
	}
}

func BenchmarkClosedSuccessParallelSources(b *testing.B) {
	g, err := memory.NewBreaker(gate.Policy{})
	require.NoError(b, err)
	ctx := context.Background()
	names := make([]string, 64)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s := names[i%len(names)]
			i++
			d, _ := g.TryEnter(ctx, s)
			_, _ = g.Record(ctx, s, d, gate.Success)
		}
	})
}

// The lock-free Closed success path must still reset a failure streak.
func TestSuccessBetweenFailuresResetsTheStreak(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 3})
	require.NoError(t, err)
	ctx := context.Background()
	for i, o := range []gate.Outcome{gate.Failure, gate.Failure, gate.Success, gate.Failure, gate.Failure} {
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, d.Allowed, "call %d", i)
		u, err := b.Record(ctx, "s", d, o)
		require.NoError(t, err)
		assert.Equal(t, gate.Closed, u.State, "call %d", i)
	}
}

// Successes racing a failure streak that never reaches the threshold on its
// own never open the breaker, whatever the interleaving.
func TestConcurrentSuccessesNeverTripAShortStreak(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 2})
	require.NoError(t, err)
	ctx := context.Background()
	done := make(chan struct{})
	errc := make(chan error, 5)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				d, _ := b.TryEnter(ctx, "s")
				if !d.Allowed {
					errc <- assert.AnError
					return
				}
				_, _ = b.Record(ctx, "s", d, gate.Success)
			}
		}()
	}
	for i := range 20000 {
		o := gate.Success
		if i%2 == 0 {
			o = gate.Failure
		}
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		require.True(t, d.Allowed, "opened after %d outcomes of a streak of at most 1", i)
		u, err := b.Record(ctx, "s", d, o)
		require.NoError(t, err)
		require.Equal(t, gate.Closed, u.State)
	}
	close(done)
	for range 4 {
		require.NoError(t, <-errc)
	}
}

// The Open rejection skips the lock: what it reports must follow every change
// of the Open phase — a Fatal that pushes openUntil, an override that takes
// the end away and gives it back, the end itself.
func TestLockFreeOpenRejectionFollowsThePhase(t *testing.T) {
	clk := testutil.NewFakeClock()
	const cooldown = time.Second
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, MaxCooldown: 8 * cooldown},
		memory.WithClock(clk))
	require.NoError(t, err)
	ctx := context.Background()
	enter := func() gate.Decision {
		d, err := b.TryEnter(ctx, "s")
		require.NoError(t, err)
		return d
	}
	d := enter()
	u, err := b.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)

	clk.Advance(100 * time.Millisecond)
	assert.Equal(t, gate.Decision{State: gate.Open, RetryAfter: 900 * time.Millisecond, Generation: u.Generation}, enter())
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = enter() }), "an Open rejection allocates nothing")

	u2, err := b.Record(ctx, "s", d, gate.Fatal) // pushes openUntil to now + cooldown
	require.NoError(t, err)
	require.Equal(t, cooldown, u2.RetryAfter)
	clk.Advance(100 * time.Millisecond)
	assert.Equal(t, gate.Decision{State: gate.Open, RetryAfter: cooldown - 100*time.Millisecond, Generation: u2.Generation}, enter(),
		"the pushed openUntil, not the first")

	require.NoError(t, b.Force(ctx, "s", gate.ForceOpen))
	forced := enter()
	assert.Equal(t, gate.ForceOpen, forced.Forced, "an override is reported")
	assert.Zero(t, forced.RetryAfter, "a forced Open has no certain end")
	require.NoError(t, b.Force(ctx, "s", gate.ForceNone)) // a fresh Closed record
	d = enter()
	assert.True(t, d.Allowed, "lifting the override leaves no Open phase behind: %+v", d)
	assert.Equal(t, gate.Closed, d.State)

	u3, err := b.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, cooldown, u3.RetryAfter)
	clk.Advance(cooldown - time.Millisecond)
	assert.Equal(t, gate.Decision{State: gate.Open, RetryAfter: time.Millisecond, Generation: u3.Generation}, enter())
	clk.Advance(time.Millisecond)
	probe := enter()
	assert.True(t, probe.Allowed && probe.Probe, "at openUntil the source is HalfOpen and grants a probe: %+v", probe)
	assert.Equal(t, gate.HalfOpen, probe.State)
}

// Goroutines meeting sources for the first time at once share one record per
// source: with ConsecutiveFailures equal to the number of goroutines, each
// source opens only when every goroutine's failure landed on the same record.
func TestFirstSightOfSourcesFromManyGoroutinesSharesOneRecord(t *testing.T) {
	const goroutines, sources = 8, 64
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: goroutines})
	require.NoError(t, err)
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range sources {
				s := "s" + strconv.Itoa((i+g*7)%sources) // each goroutine its own order
				d, err := b.TryEnter(ctx, s)
				if assert.NoError(t, err) && assert.True(t, d.Allowed) {
					_, err = b.Record(ctx, s, d, gate.Failure)
					assert.NoError(t, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range sources {
		s, err := b.Snapshot(ctx, "s"+strconv.Itoa(i))
		require.NoError(t, err)
		assert.Equal(t, gate.Open, s.State, "source s%d: %d failures counted", i, s.ConsecutiveFailures)
	}
}

// Each source keeps a record of its own however many there are: as sources
// are added one by one (past the few the breaker finds by name, into its
// map), opening one leaves every other as it was, and names that share a
// prefix or differ only in length are told apart.
func TestBreakerKeepsEachSourceApartAsSourcesAreAdded(t *testing.T) {
	ctx := context.Background()
	b, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	names := []string{"a", "ab", "abc", "b", "ba", "c", "cc", "d"}
	for n, name := range names {
		d, err := b.TryEnter(ctx, name)
		require.NoError(t, err)
		require.True(t, d.Allowed, "source %q before it failed", name)
		_, err = b.Record(ctx, name, d, gate.Fatal)
		require.NoError(t, err)
		for _, other := range names[:n+1] {
			d, err := b.TryEnter(ctx, other)
			require.NoError(t, err)
			assert.False(t, d.Allowed, "%q opened, with %d sources: %+v", other, n+1, d)
			assert.Equal(t, gate.Open, d.State, "%q", other)
		}
		for _, other := range names[n+1:] {
			d, err := b.TryEnter(ctx, other)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "%q never failed, after %q opened: %+v", other, name, d)
			_, err = b.Record(ctx, other, d, gate.Released)
			require.NoError(t, err)
		}
	}
}
