// Package contracttest holds the exported contract suites every gate
// implementation must pass: RunBreaker for gate.ProviderGate and
// RunQuota for gate.QuotaGate. A third-party backend calls them from
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
//
// # Time
//
// A clock whose Slack is 0 is taken for a fake one (FakeClock, or a clock
// that drives miniredis): nothing moves while the gate works, and every
// duration or instant the gate reports is compared exactly with the value
// the suite computes.
//
// On real time (RealClock against a real redis-server) a gate acts at an
// instant of its own clock — the server's TIME, in µs — somewhere between
// the test's clock read just before the call and the one read just after it
// (same machine, same wall clock). The harness brackets every call that way,
// and expected values become ranges: an Open rejection's RetryAfter lies
// between openUntil's earliest instant minus the end of the rejecting call
// and openUntil's latest instant minus its start, where openUntil is itself
// the bracket of the tripping call plus the cooldown; a quota rejection's
// wait is bounded the same way from the call that spent the allowance. The
// reported value must fall in that range widened by 1ms, for the gates' µs
// rounding and nothing else. A slow round trip on a loaded machine widens
// the range by what it took instead of failing the comparison, and a fast
// one keeps the range as tight as the call: a wrong duration is caught on
// real time when it is off by more than the round trips around it (a few ms
// on an idle machine); a fake clock catches any error.
//
// Slack matters only where the suite checks that a call made clearly before
// a boundary (openUntil, a lease's expiry, the end of a quota wait) is still
// turned away: it stands 2×Slack early (half the wait, for a quota wait
// shorter than 4×Slack). When the call's bracket shows that
// it may still have landed at or after the boundary — admitting it is then
// right — the check is inconclusive and starts over, on a fresh source or
// from the next rejection, a few times at most; a run whose every attempt is
// too slow to judge fails rather than passes. Waits to reach a boundary
// sleep until the boundary's latest instant plus 1ms.
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
	// Slack is 0 for a fake clock, which makes every comparison of the
	// suites exact. On real time it is how far before a boundary a "not
	// yet" check stands (2×Slack), a few tens of milliseconds; comparisons
	// of durations use the brackets of the package doc, not Slack.
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
	// Tolerance is returned by Slack (default 50ms when zero): half the
	// margin a "not yet" check leaves before its boundary.
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
