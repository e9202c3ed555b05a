package retry

import (
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Deliveries is a scope's last-success time, shared by the calls of the
// scope: a call is stalled only when no call of its scope delivered within
// the stall window. The zero value is ready. Safe for concurrent
// use.
type Deliveries struct {
	last atomic.Int64 // unix nanoseconds of the last success; 0: none
}

// Mark records a success at t (a later one wins).
func (d *Deliveries) Mark(t time.Time) {
	n := t.UnixNano()
	for {
		cur := d.last.Load()
		if cur >= n || d.last.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Last returns the time of the last success, and false when there was none.
func (d *Deliveries) Last() (time.Time, bool) {
	n := d.last.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// StallClock splits one call's time into attempt time and stall time —
// everything else: waiting for a source, backing off (a breaker
// cooldown is unproductive waiting). It implements admission.StallBudget. A
// StallClock belongs to one call and is not safe for concurrent use.
type StallClock struct {
	clock     gate.Clock
	window    time.Duration
	scope     *Deliveries
	begun     time.Time
	attempted time.Duration // closed attempts
	since     time.Time     // start of the open attempt
	ended     time.Time     // end of the last attempt
	open      bool
}

// NewStallClock starts a call's stall clock now. window is STALL_WINDOW_S;
// scope is the scope's Deliveries (nil: the call alone decides).
func NewStallClock(clock gate.Clock, window time.Duration, scope *Deliveries) *StallClock {
	s := &StallClock{}
	s.start(clock, window, scope, clock.Now())
	return s
}

// start (re)starts s at now, as NewStallClock does.
func (s *StallClock) start(clock gate.Clock, window time.Duration, scope *Deliveries, now time.Time) {
	*s = StallClock{clock: clock, window: window, scope: scope, begun: now}
}

// BeginAttempt starts counting attempt time.
func (s *StallClock) BeginAttempt() { s.beginAt(s.clock.Now()) }

// beginAt is BeginAttempt for a caller that read the clock just now.
func (s *StallClock) beginAt(now time.Time) {
	if !s.open {
		s.open, s.since = true, now
	}
}

// EndAttempt stops counting attempt time.
func (s *StallClock) EndAttempt() { s.endAt(s.clock.Now()) }

// endAt is EndAttempt for a caller that read the clock just now.
func (s *StallClock) endAt(now time.Time) {
	if s.open {
		s.open = false
		s.attempted += now.Sub(s.since)
		s.ended = now
	}
}

// lastEnd is when the last attempt ended: a success's delivery time.
func (s *StallClock) lastEnd() time.Time {
	if s.ended.IsZero() {
		return s.clock.Now()
	}
	return s.ended
}

// StallTime is the call's time so far outside attempts.
func (s *StallClock) StallTime() time.Duration {
	now := s.clock.Now()
	attempted := s.attempted
	if s.open {
		attempted += now.Sub(s.since)
	}
	return now.Sub(s.begun) - attempted
}

// Remaining is the stall time left in the window; ≤ 0 once it is spent.
func (s *StallClock) Remaining() time.Duration { return s.window - s.StallTime() }

// Stalled reports whether the call's stall time exceeds the window (strictly)
// and no call of its scope delivered a success within the window.
func (s *StallClock) Stalled() bool {
	if s.StallTime() <= s.window {
		return false
	}
	if s.scope != nil {
		if last, ok := s.scope.Last(); ok && s.clock.Now().Sub(last) <= s.window {
			return false
		}
	}
	return true
}

// Horizon is how long the call may still wait before it is stalled: until
// its stall time exceeds the window and, when its scope's calls delivered,
// until the window after the last delivery has passed too. It implements
// admission.StallHorizon; ≤ 0 once the call would be stalled.
func (s *StallClock) Horizon() time.Duration {
	h := s.Remaining()
	if s.scope != nil {
		if last, ok := s.scope.Last(); ok {
			h = max(h, last.Add(s.window).Sub(s.clock.Now()))
		}
	}
	return h
}
