package memory

import "github.com/pgw-go/pgw/gate"

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
