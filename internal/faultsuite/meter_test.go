package faultsuite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The stall check excuses a call past its bound only while its scope kept
// delivering: a call that waited through a pause in its scope's deliveries
// longer than the bound broke the stall budget, even when a delivery (its
// own success, say) came before it returned.
func TestKeptDeliveringLooksAtEveryPauseOfTheCall(t *testing.T) {
	const bound = 1800 * time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	watch := func(ms ...int) *scopeWatch {
		w := newScopeWatch(0, bound, nil)
		for _, m := range ms {
			w.deliver(ScopeChat, at(m))
		}
		return w
	}
	every := func(from, to, step int) []int {
		var out []int
		for m := from; m <= to; m += step {
			out = append(out, m)
		}
		return out
	}
	tests := []struct {
		name       string
		w          *scopeWatch
		start, end int
		stall      time.Duration
		kept       bool
	}{
		{"deliveries all along", watch(every(0, 5000, 500)...), 0, 5000, 4 * time.Second, true},
		{"a pause past the bound, closed by the call's own success", watch(500, 4900), 0, 5000, 4 * time.Second, false},
		{"no delivery since before the bound", watch(500), 0, 5000, 4 * time.Second, false},
		{"no delivery at all", watch(), 0, 5000, 4 * time.Second, false},
		{"a pause past the bound while the call's stall was still short", watch(0, 2500, 3000, 3500, 4000, 4500), 0, 5000,
			2500 * time.Millisecond, true},
		{"a pause before the call", watch(0, 3000, 3500, 4000, 4500, 5000), 3200, 8000, 2 * time.Second, false},
		{"a pause before the call, deliveries during it", watch(append([]int{0}, every(3000, 8000, 500)...)...), 3200, 8000,
			4 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.kept, tt.w.keptDelivering(ScopeChat, at(tt.start), at(tt.end), tt.stall, bound))
		})
	}
}

// A delivery marked after a later one (its goroutine ran late) still
// splits the pause it fell in.
func TestALateMarkedDeliverySplitsItsPause(t *testing.T) {
	const bound = time.Second
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := newScopeWatch(0, bound, nil)
	w.deliver(ScopeChat, at(0))
	w.deliver(ScopeChat, at(3000))
	assert.False(t, w.keptDelivering(ScopeChat, at(0), at(3000), 3*time.Second, bound), "a 3 s pause")
	w.deliver(ScopeChat, at(1000)) // marked late
	w.deliver(ScopeChat, at(2000)) // marked late
	assert.True(t, w.keptDelivering(ScopeChat, at(0), at(3000), 3*time.Second, bound), "no pause over the bound left")
}
