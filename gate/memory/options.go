package memory

import (
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Option configures a memory gate.
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
		opt(&o)
	}
	return o
}

// steady is the wall clock as the rate gates read it: the wall time at the
// gate's creation moved on by the monotonic clock alone. Their buckets and
// windows need durations, which this gives (as time.Since does, unmoved by
// steps of the wall clock) for half the cost of time.Now.
type steady struct{ epoch time.Time }

func (s steady) Now() time.Time { return s.epoch.Add(time.Since(s.epoch)) }

// steadyClock is c, or steady when c is the system clock.
func steadyClock(c gate.Clock) gate.Clock {
	if _, ok := c.(gate.SystemClock); ok {
		return steady{epoch: time.Now()}
	}
	return c
}

// sameSteady converts read, a reading of clock from, into what clock to
// would have told at the same instant, when both are steady clocks of the
// system's (their epochs may differ: the monotonic clock bridges them).
// ok is false for any other clock, or a zero read: to must then be read.
func sameSteady(from, to gate.Clock, read time.Time) (at time.Time, ok bool) {
	if read.IsZero() {
		return time.Time{}, false
	}
	if _, fromSteady := from.(steady); !fromSteady {
		return time.Time{}, false
	}
	t, toSteady := to.(steady)
	if !toSteady {
		return time.Time{}, false
	}
	return t.epoch.Add(read.Sub(t.epoch)), true
}
