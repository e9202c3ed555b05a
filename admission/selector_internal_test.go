package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// seq returns the given numbers in turn, then repeats the last.
func seq(xs ...float64) func() float64 {
	i := 0
	return func() float64 {
		x := xs[min(i, len(xs)-1)]
		i++
		return x
	}
}

func names(s *selector, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = s.sources[j].Name
	}
	return out
}

func TestSelectorTriesPriorityTiersInAscendingOrder(t *testing.T) {
	s := newSelector([]Source{{Name: "backup", Priority: 1}, {Name: "main", Priority: 0}, {Name: "last", Priority: 7}}, seq(0))
	assert.Equal(t, []string{"main", "backup", "last"}, names(&s, s.order(nil, nil)))
}

func TestSelectorIsWeightedWithinATier(t *testing.T) {
	// a has weight 3, b weight 1: a is first for r in [0, 0.75), b for [0.75, 1).
	src := []Source{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}}
	cases := []struct {
		r    float64
		want []string
	}{
		{0, []string{"a", "b"}},
		{0.74, []string{"a", "b"}},
		{0.75, []string{"b", "a"}},
		{0.99, []string{"b", "a"}},
	}
	for _, c := range cases {
		s := newSelector(src, seq(c.r))
		assert.Equal(t, c.want, names(&s, s.order(nil, nil)), "r=%v", c.r)
	}
}

func TestSelectorWeightsShareFirstPicks(t *testing.T) {
	src := []Source{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 1}}
	const n = 4000
	first := map[string]int{}
	for i := range n {
		s := newSelector(src, seq((float64(i)+0.5)/n))
		first[names(&s, s.order(nil, nil))[0]]++
	}
	assert.Equal(t, map[string]int{"a": 1000, "b": 2000, "c": 1000}, first)
}

func TestSelectorMovesSourcesThatFailedInThisCallLast(t *testing.T) {
	s := newSelector([]Source{{Name: "a"}, {Name: "b"}, {Name: "c", Priority: 1}}, seq(0))
	assert.Equal(t, []string{"b", "c", "a"}, names(&s, s.order(nil, map[string]int{"a": 1})),
		"a failed: it goes after every healthy source, lower tiers included")
	assert.Equal(t, []string{"c", "b", "a"}, names(&s, s.order(nil, map[string]int{"a": 2, "b": 1})),
		"fewest failures first among the failed")
}

func TestSelectorOrderDoesNotAllocate(t *testing.T) {
	s := newSelector([]Source{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d", Priority: 1}}, seq(0.3))
	allocs := testing.AllocsPerRun(100, func() {
		var buf [maxStackSources]int
		_ = s.order(buf[:0], nil)
	})
	assert.Zero(t, allocs)
}
