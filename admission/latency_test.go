package admission_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
)

func withBalance(b admission.Balance) fixtureOpt {
	return func(c *admission.Config) { c.Balance = b }
}

// fixedRand is a deterministic rand for the admission, one stream per n.
func fixedRand(n uint64) func() float64 {
	r := rand.New(rand.NewPCG(n, n^0x9e3779b97f4a7c15))
	return r.Float64
}

// firstPicks runs n rounds and counts the source each admits, giving every
// ticket back at once.
func firstPicks(t *testing.T, f *fixture, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		tk, _, err := f.adm.Pick(context.Background(), nil, 0)
		require.NoError(t, err)
		require.NotNil(t, tk)
		got[tk.Source]++
		require.NoError(t, tk.Done(context.Background(), admission.Result{}))
	}
	return got
}

func TestLatencyBalancePrefersTheFasterSource(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(1)),
		withSources(admission.Source{Name: "fast"}, admission.Source{Name: "slow"}))
	lat := f.adm.Latency()
	lat.Observe("fast", 50*time.Millisecond)
	lat.Observe("slow", 2*time.Second)
	got := firstPicks(t, f, 200)
	assert.Equal(t, map[string]int{"fast": 200}, got, "two candidates of two: the lower load always wins")
}

func TestWeightedBalanceIgnoresLatency(t *testing.T) {
	f := newFixture(t, withRand(fixedRand(1)),
		withSources(admission.Source{Name: "fast"}, admission.Source{Name: "slow"}))
	assert.Equal(t, admission.BalanceWeighted, f.adm.Balance())
	f.adm.Latency().Observe("fast", 50*time.Millisecond)
	f.adm.Latency().Observe("slow", 2*time.Second)
	got := firstPicks(t, f, 200)
	assert.InDelta(t, 100, got["slow"], 30, "weighted draws split evenly: %v", got)
}

func TestLatencyBalanceCountsAttemptsInFlight(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(2)),
		withSources(admission.Source{Name: "a"}, admission.Source{Name: "b"}))
	lat := f.adm.Latency()
	lat.Observe("a", 100*time.Millisecond)
	lat.Observe("b", 150*time.Millisecond)
	ctx := context.Background()
	// a: 100 ms × 1 < b: 150 ms × 1 → a; then a: 100 × 2 > 150 × 1 → b.
	t1, _, err := f.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, "a", t1.Source)
	t2, _, err := f.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, "b", t2.Source)
	assert.Equal(t, int64(1), lat.InFlight("a"))
	assert.Equal(t, int64(1), lat.InFlight("b"))
	require.NoError(t, t1.Done(ctx, admission.Result{}))
	require.NoError(t, t2.Done(ctx, admission.Result{}))
	require.NoError(t, t2.Done(ctx, admission.Result{}), "a second Done is a no-op")
	assert.Equal(t, int64(0), lat.InFlight("a"))
	assert.Equal(t, int64(0), lat.InFlight("b"))
}

func TestLatencyBalanceTriesARecoveredSourceAgain(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(3)),
		withSources(admission.Source{Name: "a"}, admission.Source{Name: "b"}))
	lat := f.adm.Latency()
	lat.Observe("a", 2*time.Second) // a was slow once
	for range 10 {
		lat.Observe("b", 100*time.Millisecond)
	}
	assert.Equal(t, map[string]int{"b": 20}, firstPicks(t, f, 20))
	// b keeps answering in 100 ms; a is not called. Its cost decays toward
	// 0 (τ = 10 s): below b's after 10 s · ln(20) ≈ 30 s.
	for range 40 {
		f.clk.Advance(time.Second)
		lat.Observe("b", 100*time.Millisecond)
	}
	got := firstPicks(t, f, 1)
	assert.Equal(t, map[string]int{"a": 1}, got, "a decayed below b and is tried again")
	st := lat.Stats()
	assert.Equal(t, "a", st[0].Source)
	assert.Less(t, st[0].EWMA, 100*time.Millisecond)
	assert.InDelta(t, float64(100*time.Millisecond), float64(st[1].EWMA), float64(time.Millisecond))
}

func TestLatencyPeakRisesAtOnceAndFallsSmoothly(t *testing.T) {
	f := newFixture(t, withSources(admission.Source{Name: "a"}))
	lat := f.adm.Latency()
	lat.Observe("a", 100*time.Millisecond)
	lat.Observe("a", time.Second)
	assert.Equal(t, time.Second, lat.Stats()[0].EWMA, "a slower answer is taken at once (peak)")
	f.clk.Advance(10 * time.Second) // one time constant
	lat.Observe("a", 100*time.Millisecond)
	// cost decays to 1 s/e ≈ 368 ms, then moves 1-1/e of the way to 100 ms... with
	// the weight of a sample after one τ: w = 1/e on the old value.
	want := (float64(time.Second)/2.718281828*(1/2.718281828) + float64(100*time.Millisecond)*(1-1/2.718281828))
	assert.InDelta(t, want, float64(lat.Stats()[0].EWMA), float64(time.Millisecond))
	lat.ObserveBound("a", 10*time.Millisecond)
	assert.InDelta(t, want, float64(lat.Stats()[0].EWMA), float64(time.Millisecond), "a bound below the cost leaves it")
	lat.ObserveBound("a", 3*time.Second)
	assert.Equal(t, 3*time.Second, lat.Stats()[0].EWMA, "a bound above it raises it")
}

func TestLatencyQuantileNeedsTwentySamples(t *testing.T) {
	f := newFixture(t, withSources(admission.Source{Name: "a"}))
	lat := f.adm.Latency()
	for i := 1; i <= 19; i++ {
		lat.Observe("a", time.Duration(i)*time.Millisecond)
	}
	_, ok := lat.Quantile("a", 0.9)
	assert.False(t, ok)
	lat.Observe("a", 20*time.Millisecond)
	q, ok := lat.Quantile("a", 0.9)
	require.True(t, ok)
	assert.Equal(t, 18*time.Millisecond, q)
	_, ok = lat.Quantile("nope", 0.9)
	assert.False(t, ok)
}

func TestLatencyBalanceAvoidsPilingOntoAnUnmeasuredSource(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(4)),
		withSources(admission.Source{Name: "new"}, admission.Source{Name: "known"}))
	f.adm.Latency().Observe("known", 200*time.Millisecond)
	ctx := context.Background()
	t1, _, err := f.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, "new", t1.Source, "nothing known is cheapest: it is explored")
	t2, _, err := f.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	assert.Equal(t, "known", t2.Source, "but not again while its first attempt runs")
	require.NoError(t, t1.Done(ctx, admission.Result{}))
	require.NoError(t, t2.Done(ctx, admission.Result{}))
}

func TestBalanceIsValidated(t *testing.T) {
	_, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "a"}},
		Breaker: gate.Noop{}, Balance: "fastest", LatencyDecay: -1})
	var ce *admission.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `Balance="fastest" (legal: "weighted" or "latency")`)
	assert.Contains(t, err.Error(), "LatencyDecay=-1ns")
}

func TestLatencyBalanceKeepsInCallDemotion(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(5)),
		withSources(admission.Source{Name: "fast"}, admission.Source{Name: "slow"}))
	f.adm.Latency().Observe("fast", 10*time.Millisecond)
	f.adm.Latency().Observe("slow", time.Second)
	tk, _, err := f.adm.Pick(context.Background(), map[string]int{"fast": 1}, 0)
	require.NoError(t, err)
	assert.Equal(t, "slow", tk.Source, "a source that failed in this call goes last, however fast")
	require.NoError(t, tk.Done(context.Background(), admission.Result{}))
	tk, _, err = f.adm.Pick(context.Background(), nil, 0)
	require.NoError(t, err)
	assert.Equal(t, "fast", tk.Source)
	require.NoError(t, tk.Done(context.Background(), admission.Result{}))
}

func TestLatencyBalanceStaysWithinThePriorityTier(t *testing.T) {
	f := newFixture(t, withBalance(admission.BalanceLatency), withRand(fixedRand(6)),
		withSources(admission.Source{Name: "main"}, admission.Source{Name: "backup", Priority: 1}))
	f.adm.Latency().Observe("main", time.Second)
	f.adm.Latency().Observe("backup", time.Millisecond)
	assert.Equal(t, map[string]int{"main": 10}, firstPicks(t, f, 10), "a faster backup tier is not preferred")
}
