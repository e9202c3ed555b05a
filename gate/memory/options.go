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
