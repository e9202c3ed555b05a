package contracttest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// rounding is how far a reported duration or instant may stray outside the
// bracket the suite computes for it on real time: the gates keep time in
// whole µs (Redis TIME, truncated; waits rounded up), a bracket is read in
// ns, and Advance sleeps by the monotonic clock while the brackets are read
// on the wall clock the server uses. A few µs would do; 1ms leaves room
// without letting a wrong formula through (the suite's smallest durations
// are tens of ms). On a clock with Slack 0 there is no rounding margin.
const rounding = time.Millisecond

// moment is an instant known only to lie within [lo, hi] of the test's
// clock. A gate operation takes effect at one instant of the backend's clock
// (the server's TIME for Redis), somewhere between the test's clock read just
// before the call and the one read just after it; expected values follow
// from those two reads instead of one point estimate, so a slow round trip
// widens the bracket instead of failing the comparison. On a fake clock
// nothing moves during a call and lo == hi: every comparison is exact.
type moment struct{ lo, hi time.Time }

// at is the moment known exactly: a reported instant such as OpenUntil.
func at(t time.Time) moment { return moment{t, t} }

// add shifts the moment by d.
func (m moment) add(d time.Duration) moment { return moment{m.lo.Add(d), m.hi.Add(d)} }

// since is how long from the operation op until m: from m.lo − op.hi to
// m.hi − op.lo.
func (m moment) since(op moment) interval { return interval{m.lo.Sub(op.hi), m.hi.Sub(op.lo)} }

// interval is a duration known only to lie within [lo, hi].
type interval struct{ lo, hi time.Duration }

// exactly is the interval holding d alone.
func exactly(d time.Duration) interval { return interval{d, d} }

// clamped applies RetryAfter's clamp, max(0, ·), to both ends.
func (i interval) clamped() interval { return interval{max(i.lo, 0), max(i.hi, 0)} }

// timing is the part of a harness that brackets gate calls: it reads the
// test's clock around each call (begin, end) and keeps the latest bracket,
// which the assertions that follow the call use.
type timing struct {
	clk  Clock
	last moment // the latest gate call made through the harness
}

// now reads the test's clock without its monotonic reading, so that
// brackets are on the wall clock, the one a Redis server's TIME reads.
func (tm *timing) now() time.Time { return tm.clk.Now().Round(0) }

// begin starts a bracket; end closes it and makes it the latest.
func (tm *timing) begin() time.Time { return tm.now() }

func (tm *timing) end(lo time.Time) { tm.last = moment{lo, tm.now()} }

// exact reports whether the clock is a fake one (Slack 0), whose comparisons
// are exact.
func (tm *timing) exact() bool { return tm.clk.Slack() == 0 }

// margin is the rounding allowance: 0 on a fake clock.
func (tm *timing) margin() time.Duration {
	if tm.exact() {
		return 0
	}
	return rounding
}

// advanceTo moves the clock to the earliest point known to be at or after
// m: exactly m on a fake clock (the boundary itself counts as reached), m.hi
// plus the rounding allowance on real time. It does nothing once there.
func (tm *timing) advanceTo(m moment) {
	if d := m.hi.Add(tm.margin()).Sub(tm.now()); d > 0 {
		tm.clk.Advance(d)
	}
}

// advancePast moves the clock d past the latest gate call: every boundary
// that call set d ahead (openUntil, a lease's expiry) is then reached.
func (tm *timing) advancePast(d time.Duration) {
	if tm.last.hi.IsZero() {
		panic("contracttest: advancePast before any gate call through the harness")
	}
	tm.advanceTo(tm.last.add(d))
}

// within asserts got ∈ want: equal on a fake clock, within want widened by
// the rounding allowance on real time.
func (tm *timing) within(t *testing.T, want interval, got time.Duration, what string) bool {
	t.Helper()
	if tm.exact() && want.lo == want.hi {
		return assert.Equal(t, want.lo, got, what)
	}
	lo, hi := want.lo-tm.margin(), want.hi+tm.margin()
	if got >= lo && got <= hi {
		return true
	}
	return assert.Failf(t, "duration outside its bracket", "%s: want %v … %v (bracketed by the test's clock around the calls, ± %v), got %v",
		what, want.lo, want.hi, tm.margin(), got)
}

// withinTime asserts got ∈ want, as within does for durations.
func (tm *timing) withinTime(t *testing.T, want moment, got time.Time, what string) bool {
	t.Helper()
	if tm.exact() && want.lo.Equal(want.hi) {
		return assert.True(t, want.lo.Equal(got), "%s: want %v, got %v", what, want.lo, got)
	}
	lo, hi := want.lo.Add(-tm.margin()), want.hi.Add(tm.margin())
	if !got.Before(lo) && !got.After(hi) {
		return true
	}
	return assert.Failf(t, "instant outside its bracket", "%s: want %v … %v (bracketed by the test's clock around the calls, ± %v), got %v",
		what, want.lo, want.hi, tm.margin(), got)
}

// before reports whether the latest call certainly took effect before m:
// its bracket ends, rounding allowed for, before m can begin. A "not yet"
// check (a rejection just before a boundary) is conclusive only then; on a
// loaded machine a call meant to land early may land at or after the
// boundary, and the gate is then right to admit it.
func (tm *timing) before(m moment) bool { return tm.last.hi.Add(tm.margin()).Before(m.lo) }
