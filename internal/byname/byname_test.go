package byname

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// An Index answers as its map does, below and above the few it finds by
// comparing names.
func TestIndexAnswersAsItsMap(t *testing.T) {
	for n := 0; n <= few+3; n++ {
		m := map[string]int{}
		for i := range n {
			m[fmt.Sprintf("s%d", i)] = i + 1
		}
		x := Of(m)
		for i := range n + 2 {
			name := fmt.Sprintf("s%d", i)
			want, wantOK := m[name]
			got, ok := x.Get(name)
			require.Equal(t, wantOK, ok, "%d entries, %s", n, name)
			require.Equal(t, want, got, "%d entries, %s", n, name)
		}
		_, ok := x.Get("")
		require.False(t, ok)
	}
	var zero Index[int]
	_, ok := zero.Get("s0")
	require.False(t, ok, "the zero Index finds nothing")
}
