package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

func TestNewQuotaRejectsInvalidLimits(t *testing.T) {
	cases := []struct {
		name   string
		limits gate.Limits
		field  string
	}{
		{"NegativeRPM", gate.Limits{RPM: -1}, "RPM=-1"},
		{"NegativeTPM", gate.Limits{TPM: -5}, "TPM=-5"},
		{"NegativeMaxInFlight", gate.Limits{MaxInFlight: -2}, "MaxInFlight=-2"},
		{"MaxInFlightTooLarge", gate.Limits{MaxInFlight: gate.MaxInFlightLimit + 1}, "MaxInFlight=16777217"},
		{"TPMNotCountableExactly", gate.Limits{TPM: 40_000_001}, "TPM=40000001"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := memory.NewQuota(map[string]gate.Limits{"ok": {RPM: 60}, "bad-src": c.limits})
			require.Error(t, err)
			assert.Nil(t, q)
			var le *gate.LimitsError
			require.True(t, errors.As(err, &le), "want *gate.LimitsError, got %T", err)
			assert.Contains(t, err.Error(), `source "bad-src"`)
			assert.Contains(t, err.Error(), c.field)
			assert.Contains(t, err.Error(), "legal:")
		})
	}
}

func TestNewQuotaAcceptsLargeRoundLimits(t *testing.T) {
	// 150M TPM (a real tier) and 10 000 000 RPM share factors with a
	// minute's µs, so they are exact.
	_, err := memory.NewQuota(map[string]gate.Limits{"big": {RPM: 10_000_000, TPM: 150_000_000, MaxInFlight: gate.MaxInFlightLimit}})
	require.NoError(t, err)
}

func TestNewQuotaListsEveryProblem(t *testing.T) {
	_, err := memory.NewQuota(map[string]gate.Limits{
		"a": {RPM: -1, TPM: -1},
		"b": {MaxInFlight: -1},
	})
	require.Error(t, err)
	var le *gate.LimitsError
	require.True(t, errors.As(err, &le))
	assert.Len(t, le.Problems, 3, "one problem per bad field: %v", err)
}

// TestQuotaRetryAfterIsExactOnANanosecondClock: the gate counts µs, the
// caller's clock ns; RetryAfter is measured from the caller's instant, so a
// retry exactly RetryAfter later is admitted and one 1ns earlier is not.
func TestQuotaRetryAfterIsExactOnANanosecondClock(t *testing.T) {
	clk := testutil.NewFakeClock()
	clk.Advance(123_456 * time.Nanosecond) // not on a µs
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {RPM: 7}}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := t.Context()
	for range 7 {
		_, d, err := q.Acquire(ctx, "s", 0)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	clk.Advance(777 * time.Nanosecond)
	_, d, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	// 60s/7 = 8 571 428.57…µs from the first grant's µs, rounded up.
	first := testutil.Epoch.Add(123 * time.Microsecond)
	assert.Equal(t, first.Add(8_571_429*time.Microsecond), clk.Now().Add(d.RetryAfter), "RetryAfter points at the first whole µs with capacity")

	clk.Advance(d.RetryAfter - time.Nanosecond)
	_, early, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, early.Allowed, "1ns before RetryAfter")
	assert.Equal(t, time.Nanosecond, early.RetryAfter)
	clk.Advance(time.Nanosecond)
	_, at, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.True(t, at.Allowed, "exactly at RetryAfter")
}

// TestQuotaClockSteppingBackRefillsNothing: a wall clock stepped back must
// not hand out capacity twice.
func TestQuotaClockSteppingBackRefillsNothing(t *testing.T) {
	clk := testutil.NewFakeClock()
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {RPM: 60}}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := t.Context()
	for range 60 {
		_, d, err := q.Acquire(ctx, "s", 0)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	clk.Advance(-time.Hour)
	_, d, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	clk.Advance(time.Hour + time.Second)
	_, d, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "one request refilled one second after the last grant")
}

// TestQuotaDebtIsCappedAtOneExtraMinute: an absurd actual token count cannot
// block a source for longer than two minutes' refill.
func TestQuotaDebtIsCappedAtOneExtraMinute(t *testing.T) {
	clk := testutil.NewFakeClock()
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {TPM: 1000}}, memory.WithClock(clk))
	require.NoError(t, err)
	ctx := t.Context()
	p, _, err := q.Acquire(ctx, "s", 10)
	require.NoError(t, err)
	require.NoError(t, q.Settle(ctx, p, 1<<62))
	_, d, err := q.Acquire(ctx, "s", 1000)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	assert.Equal(t, 2*time.Minute, d.RetryAfter)
}

func TestQuotaLimitsAndInFlight(t *testing.T) {
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {MaxInFlight: 2}, "free": {}})
	require.NoError(t, err)
	l, ok := q.Limits("s")
	assert.True(t, ok)
	assert.Equal(t, gate.Limits{MaxInFlight: 2}, l)
	_, ok = q.Limits("unknown")
	assert.False(t, ok)
	p, _, err := q.Acquire(t.Context(), "s", 0)
	require.NoError(t, err)
	assert.Equal(t, 1, q.InFlight("s"))
	require.NoError(t, q.Release(t.Context(), p))
	assert.Equal(t, 0, q.InFlight("s"))
	assert.Equal(t, 0, q.InFlight("free"))
}

// TestQuotaReleaseOfAForgedLeaseFreesNothing: only the current lease of a
// slot frees it; a wrong generation or an unknown slot frees nothing.
func TestQuotaReleaseOfAForgedLeaseFreesNothing(t *testing.T) {
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {MaxInFlight: 1}})
	require.NoError(t, err)
	ctx := t.Context()
	p, _, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.NotZero(t, p.Lease)
	for _, forged := range []uint64{p.Lease + 1<<24, p.Lease + 5, 1} {
		require.NoError(t, q.Release(ctx, gate.Permit{Source: "s", Lease: forged}))
		assert.Equal(t, 1, q.InFlight("s"), "lease %#x must free nothing", forged)
	}
	require.NoError(t, q.Release(ctx, gate.Permit{Source: "other", Lease: p.Lease}))
	assert.Equal(t, 1, q.InFlight("s"), "a permit names its source")
	require.NoError(t, q.Release(ctx, p))
	assert.Equal(t, 0, q.InFlight("s"))
}

// Each source has its own account, whether the quota has a few sources or
// many, and a source it was not given is unlimited: names that share a
// prefix or differ only in length are told apart.
func TestQuotaKeepsEachSourceApart(t *testing.T) {
	ctx := context.Background()
	for _, names := range [][]string{{"a", "ab", "b"}, {"a", "ab", "abc", "b", "ba", "c"}} {
		limits := map[string]gate.Limits{}
		for _, n := range names {
			limits[n] = gate.Limits{MaxInFlight: 1}
		}
		q, err := memory.NewQuota(limits)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			if _, qd, err := q.Acquire(ctx, n, 0); err != nil || !qd.Allowed {
				t.Fatalf("%d sources: Acquire(%q) = %+v, %v; want its one slot", len(names), n, qd, err)
			}
			for _, m := range names[:i+1] {
				if got := q.InFlight(m); got != 1 {
					t.Errorf("%d sources: InFlight(%q) = %d after %q took a slot, want 1", len(names), m, got, n)
				}
			}
			for _, m := range names[i+1:] {
				if got := q.InFlight(m); got != 0 {
					t.Errorf("%d sources: InFlight(%q) = %d after %q took a slot, want 0", len(names), m, got, n)
				}
			}
		}
		if _, ok := q.Limits("zz"); ok {
			t.Errorf("%d sources: Limits(zz) found limits for a source the quota was not given", len(names))
		}
		if _, qd, err := q.Acquire(ctx, "zz", 0); err != nil || !qd.Allowed {
			t.Errorf("%d sources: Acquire(zz) = %+v, %v; want an unlimited source admitted", len(names), qd, err)
		}
	}
}
