package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// A nil Option is ignored by every memory constructor, as by the Redis
// ones, instead of panicking inside the constructor.
func TestMemoryGatesIgnoreANilOption(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{}, nil)
	require.NoError(t, err)
	d, err := b.TryEnter(t.Context(), "a")
	require.NoError(t, err)
	assert.True(t, d.Allowed)

	q, err := memory.NewQuota(map[string]gate.Limits{"a": {RPM: 1}}, nil)
	require.NoError(t, err)
	_, qd, err := q.Acquire(t.Context(), "a", 0)
	require.NoError(t, err)
	assert.True(t, qd.Allowed)

	assert.NotNil(t, memory.NewBudget(nil))
}
