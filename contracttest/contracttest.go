// Package contracttest holds the exported contract suites every gate
// implementation must pass: RunBreaker for gate.ProviderGate (SPEC §4) and
// RunQuota for gate.QuotaGate (SPEC §5). A third-party backend calls them from
// its own tests:
//
//	func TestContract(t *testing.T) {
//		contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
//			clk := contracttest.NewFakeClock()
//			g, err := mybackend.New(p, mybackend.WithClock(clk))
//			require.NoError(t, err)
//			return g, clk
//		})
//	}
package contracttest

import (
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Clock drives the time a gate under test sees.
type Clock interface {
	gate.Clock
	// Advance moves time forward by d: a fake clock jumps, a real clock
	// sleeps (Redis tests use real short durations, never scaled time).
	Advance(d time.Duration)
	// Slack is how far a measured duration may differ from the exact value:
	// 0 for a fake clock, a few tens of milliseconds for real time.
	Slack() time.Duration
}

// FakeClock is a Clock that moves only when told; Slack is 0. Safe for
// concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock at a fixed instant, so failures reproduce.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's instant.
func (f *FakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock by d.
func (f *FakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Slack is 0: a fake clock is exact.
func (f *FakeClock) Slack() time.Duration { return 0 }

// RealClock is the wall clock: Advance sleeps. Use it against a real
// redis-server, with policies of a few hundred milliseconds.
type RealClock struct {
	// Tolerance is returned by Slack (default 50ms when zero).
	Tolerance time.Duration
}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Advance sleeps for d.
func (RealClock) Advance(d time.Duration) { time.Sleep(d) }

// Slack returns Tolerance, or 50ms.
func (r RealClock) Slack() time.Duration {
	if r.Tolerance > 0 {
		return r.Tolerance
	}
	return 50 * time.Millisecond
}
