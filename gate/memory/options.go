package memory

import (
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Option configures a memory gate. A nil Option is ignored, as the Redis
// gates ignore one.
type Option func(*options)

type options struct {
	clock gate.Clock
}

// WithClock makes the gate read time from c instead of the wall clock; tests
// pass a fake clock to drive cooldowns and lease expiry.
func WithClock(c gate.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{clock: gate.SystemClock{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// steady is the wall clock as the rate gates read it: the wall time at the
// process's first gate moved on by the monotonic clock alone. Their buckets
// and windows need durations, which this gives (as time.Since does, unmoved
// by steps of the wall clock) for half the cost of time.Now. Every steady
// clock of the process counts from the same epoch, so that one reading
// serves the quota and the budget of an admission alike.
type steady struct{}

// steadyEpoch is the steady clocks' epoch, on a whole microsecond so that
// a reading's µs are the epoch's plus the µs elapsed; steadyEpochNS is its
// wall time in ns.
var steadyEpoch, steadyEpochNS = func() (time.Time, int64) {
	t := time.Now()
	t = t.Add(-time.Duration(t.Nanosecond() % 1000)) // Add keeps the monotonic reading
	return t, t.UnixNano()
}()

func (steady) Now() time.Time { return steadyEpoch.Add(time.Since(steadyEpoch)) }

// steadyNS is steady's Now in ns since the Unix epoch, without the time.Time.
func steadyNS() int64 { return steadyEpochNS + int64(time.Since(steadyEpoch)) }

// steadyClock is c, or steady when c is the system clock.
func steadyClock(c gate.Clock) gate.Clock {
	if _, ok := c.(gate.SystemClock); ok {
		return steady{}
	}
	return c
}

// reading is one reading of a gate's clock, in ns since the Unix epoch, by
// a caller that may hand it to another gate; steady: it was read from a
// steady clock (any other clock's reading is no other clock's). The zero
// reading is none.
type reading struct {
	ns     int64
	steady bool
}

// read reads c.
func read(c gate.Clock) reading {
	if _, ok := c.(steady); ok {
		return reading{ns: steadyNS(), steady: true}
	}
	return reading{ns: c.Now().UnixNano()}
}

// microsOn is r in µs of clock to: r itself when both are steady clocks of
// the system's, which tell the same instant alike; otherwise (or for no
// reading) to is read.
func (r reading) microsOn(to gate.Clock) int64 {
	if _, ok := to.(steady); ok && r.steady {
		return floorDiv(r.ns, 1000)
	}
	return to.Now().UnixMicro()
}

// floorDiv is a / b rounded down, as the time package's Unix readings are.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
