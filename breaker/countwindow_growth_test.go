package breaker

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// A CountWindow longer than the ring's first room counts the last
// CountWindow outcomes as the ring grows and once it wraps: 150 outcomes
// in a window of 100 — 30 failures first, then successes — leave the
// failures that are still among the last 100.
func TestCountWindowLargerThanTheRingsFirstRoom(t *testing.T) {
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: gate.Disabled}, Config{FailureThreshold: 100, CountWindow: 100})
	for i := range 150 {
		fn := succeed
		if i < 30 {
			fn = fail
		}
		_ = b.Execute(t.Context(), fn)
		c := b.Counts()
		n := min(i+1, 100)
		failures := max(0, min(30, i+1)-max(0, i+1-100))
		assert.Equal(t, uint64(failures), c.TotalFailures, "after %d outcomes", i+1)
		assert.Equal(t, uint64(n-failures), c.TotalSuccesses, "after %d outcomes", i+1)
	}
	assert.Equal(t, gate.Closed, b.State())
}

// A CountWindow as large as an int holds is legal, and a phase does not
// allocate it up front: New and calls work, counting every outcome.
func TestHugeCountWindowAllocatesOnlyWhatComes(t *testing.T) {
	b, err := New("huge", Config{CountWindow: math.MaxInt, FailureThreshold: 3, Logger: discardLogger()})
	require.NoError(t, err)
	for range 5 {
		_ = b.Execute(t.Context(), succeed)
	}
	_ = b.Execute(t.Context(), fail)
	c := b.Counts()
	assert.Equal(t, uint64(5), c.TotalSuccesses)
	assert.Equal(t, uint64(1), c.TotalFailures)
}
