package modelcheck

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestShrinkKeepsOnlyTheStepsTheFailureNeeds(t *testing.T) {
	steps := make([]int, 100)
	for i := range steps {
		steps[i] = i
	}
	// Fails while 17, 42 and 93 are all present, in order.
	fails := func(s []int) bool {
		i, j, k := slices.Index(s, 17), slices.Index(s, 42), slices.Index(s, 93)
		return i >= 0 && j > i && k > j
	}
	calls := 0
	counted := func(s []int) bool { calls++; return fails(s) }
	got := Shrink(steps, counted, nil, 1000)
	assert.Equal(t, []int{17, 42, 93}, got)
	assert.Less(t, calls, 200, "ddmin should need far fewer than n² tries")
}

func TestShrinkStopsAtTheBudget(t *testing.T) {
	steps := []int{1, 2, 3, 4, 5, 6, 7, 8}
	calls := 0
	got := Shrink(steps, func([]int) bool { calls++; return true }, nil, 3)
	assert.Equal(t, 3, calls)
	assert.NotEmpty(t, got)
}

func TestNormalizeDropsOrphanRecordsMergesAdvancesAndRenumbers(t *testing.T) {
	in := []Step{
		Enter("a", 4),
		Advance(3), Advance(0), Advance(5),
		Record("a", 2, gate.Success), // its Enter was shrunk away
		Record("a", 4, gate.Failure),
		RecordForged("b", gate.Decision{Allowed: true, Probe: true, Token: 3}, gate.Released),
		Enter("b", 9),
		Record("a", 9, gate.Fatal),
	}
	got := Normalize(in)
	require.Equal(t, []Step{
		Enter("a", 1),
		Advance(8),
		Record("a", 1, gate.Failure),
		RecordForged("b", gate.Decision{Allowed: true, Probe: true, Token: 3}, gate.Released),
		Enter("b", 2),
		Record("a", 2, gate.Fatal),
	}, got)
}

func TestNormalizeKeepsQuotaStepsWithTheirPermits(t *testing.T) {
	got := Normalize([]Step{
		Acquire("a", 3, 100),
		Settle(2, 10), // its Acquire is gone
		Release(2),
		Release(0), // the zero Permit needs no Acquire
		Settle(3, 50),
		SettleForged("b", 10, 20),
		Release(3),
	})
	require.Equal(t, []Step{
		Acquire("a", 1, 100),
		Release(0),
		Settle(1, 50),
		SettleForged("b", 10, 20),
		Release(1),
	}, got)
	assert.Equal(t, "\tAcquire(\"a\", 1, 100),\n\tRelease(0),\n\tSettle(1, 50),\n\tSettleForged(\"b\", 10, 20),\n\tRelease(1),\n", Format(got, "\t"))
}

func TestFormatPrintsPasteableConstructorCalls(t *testing.T) {
	got := Format([]Step{
		Enter("a", 1),
		Record("a", 1, gate.Failure),
		RecordForged("b", gate.Decision{Allowed: true, State: gate.HalfOpen, Probe: true, Token: 7}, gate.Success),
		Advance(120),
		Snap("c"),
		RetryAfterOf("a", "c"),
		Force("a", gate.ForceClosed),
	}, "\t")
	assert.Equal(t, `	Enter("a", 1),
	Record("a", 1, gate.Failure),
	RecordForged("b", gate.Decision{Allowed: true, State: gate.HalfOpen, Probe: true, Token: 7}, gate.Success),
	Advance(120),
	Snap("c"),
	RetryAfterOf("a", "c"),
	Force("a", gate.ForceClosed),
`, got)
}
