package modelcheck

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/pgw-go/pgw/internal/testutil"
)

// timeline is the time both gates of a lockstep run see. Now is what the
// memory gate reads (it is the memory gate's gate.Clock); Redis reads its own
// TIME, which the timeline keeps in step.
type timeline interface {
	Now() time.Time
	// Advance moves time forward by d.
	Advance(d time.Duration)
	// Settle is called before every operation with the instants near which
	// the operation's answer may change (openUntil, lease expiry, bucket
	// edges, key expiry) as a function of the current time. A real timeline
	// waits until no such instant is within its margin, then fixes Now for
	// the operation; a simulated one does nothing.
	Settle(bounds func(now time.Time) []time.Time)
	// Exact reports whether both gates see exactly the same instants.
	Exact() bool
}

// miniTimeline drives a miniredis and the memory gate together: miniredis
// TIME follows SetTime, its keys expire only on FastForward, so Advance
// moves all three.
type miniTimeline struct {
	mu  sync.Mutex
	m   *miniredis.Miniredis
	now time.Time
}

func newMiniTimeline(m *miniredis.Miniredis) *miniTimeline {
	tl := &miniTimeline{m: m, now: testutil.Epoch}
	m.SetTime(tl.now)
	return tl
}

func (tl *miniTimeline) Now() time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.now
}

func (tl *miniTimeline) Advance(d time.Duration) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.now = tl.now.Add(d)
	tl.m.SetTime(tl.now)
	tl.m.FastForward(d)
}

func (tl *miniTimeline) Settle(func(time.Time) []time.Time) {}

func (tl *miniTimeline) Exact() bool { return true }

// realTimeline is the wall clock shared by the memory gate and a real
// redis-server on the same machine. Advance sleeps; Settle keeps every
// operation at least margin away from the instants where its answer may
// change, because the two gates read the clock a few hundred µs apart (more
// on a busy machine) and an operation that straddles such an instant may
// legitimately differ.
type realTimeline struct {
	margin time.Duration
	mu     sync.Mutex
	cur    time.Time
}

func newRealTimeline(margin time.Duration) *realTimeline {
	return &realTimeline{margin: margin, cur: time.Now()}
}

func (tl *realTimeline) Now() time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.cur
}

// Advance sleeps: real Redis time cannot be moved, only waited for.
func (tl *realTimeline) Advance(d time.Duration) { time.Sleep(d) }

func (tl *realTimeline) Settle(bounds func(time.Time) []time.Time) {
	for range 100 {
		now := time.Now()
		var wait time.Duration
		for _, b := range bounds(now) {
			if d := b.Sub(now); d > -tl.margin && d < tl.margin {
				wait = max(wait, d+tl.margin)
			}
		}
		if wait == 0 {
			tl.mu.Lock()
			tl.cur = now
			tl.mu.Unlock()
			return
		}
		time.Sleep(wait)
	}
	// Boundaries denser than the margin everywhere: should not happen with
	// the real-time policies; proceed and let the comparison speak.
	tl.mu.Lock()
	tl.cur = time.Now()
	tl.mu.Unlock()
}

func (tl *realTimeline) Exact() bool { return false }
