package faultsuite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The pauses a late wake-up notes are what a cancellation bound leaves out:
// only lateness past a tick counts, and only the part inside the span
// asked about.
func TestPauseWatchCountsOnlyTheLatenessInsideTheSpan(t *testing.T) {
	p := &pauseWatch{tick: 5 * time.Millisecond}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p.note(at(0), at(4))     // on time, within a tick: no pause
	p.note(at(10), at(310))  // 300ms late
	p.note(at(400), at(450)) // 50ms late
	assert.Equal(t, 300*time.Millisecond, p.longest())
	assert.Equal(t, 350*time.Millisecond, p.within(at(0), at(1000)), "both pauses")
	assert.Equal(t, 100*time.Millisecond, p.within(at(210), at(400)), "the end of the first")
	assert.Equal(t, 25*time.Millisecond, p.within(at(425), at(900)), "the end of the second")
	assert.Zero(t, p.within(at(320), at(400)), "between them")
	assert.Zero(t, p.within(at(0), at(3)), "an on-time wake-up is no pause")
}

// A call that ignores its cancellation while the process runs is still
// late: no pause excuses it.
func TestPauseWatchSeesNoPauseInARunningProcess(t *testing.T) {
	p := &pauseWatch{tick: 5 * time.Millisecond}
	t0 := time.Unix(1000, 0)
	for i := range 200 {
		due := t0.Add(time.Duration(i) * 5 * time.Millisecond)
		p.note(due, due.Add(time.Millisecond))
	}
	assert.Zero(t, p.within(t0, t0.Add(time.Second)))
	assert.Zero(t, p.longest())
}

// A call's stall bound leaves out only the pauses that surely fell outside
// its attempts: as much as could have fallen inside them is not excused.
func TestPausedOutsideLeavesThePausesAttemptsCouldHoldInTheStall(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	assert.Equal(t, ms(400), pausedOutside(ms(500), ms(100)))
	assert.Zero(t, pausedOutside(ms(100), ms(500)), "the attempts could hold every pause")
	assert.Zero(t, pausedOutside(0, ms(50)))
	assert.Equal(t, ms(300), pausedOutside(ms(300), 0), "a call with no attempt: every pause is outside")
}

// When a paused process resumes, a goroutine checking its cancellation may
// run before the watch's own has woken up to note the pause: the pause the
// watch is still in counts already, and once noted it counts once.
func TestPauseWatchCountsAPauseItHasNotNotedYet(t *testing.T) {
	p := &pauseWatch{tick: 5 * time.Millisecond}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p.note(at(0), at(1)) // on time; next due at 6
	assert.Equal(t, 494*time.Millisecond, p.withinSoFar(at(0), at(500)), "due at 6, not woken by 500")
	assert.Zero(t, p.withinSoFar(at(0), at(10)), "within a tick of its due time it is no pause")
	p.note(at(6), at(600)) // the watch wakes up and notes it
	assert.Equal(t, 494*time.Millisecond, p.withinSoFar(at(0), at(500)), "counted once")
	assert.Equal(t, 594*time.Millisecond, p.withinSoFar(at(0), at(600)))
}
