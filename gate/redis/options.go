package redis

import (
	"fmt"
	"strings"
	"time"
)

// DefaultPrefix is the key prefix when WithPrefix is not given
// (PGW_REDIS_PREFIX's default).
const DefaultPrefix = "pgw"

// Option configures a Redis gate.
type Option func(*options)

type options struct {
	prefix string
	lease  time.Duration
}

// WithPrefix sets the prefix of every key the gate writes (default "pgw"),
// so several deployments can share one Redis. It must be non-empty and free
// of '{' and '}', which would move the hash tag.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithLease sets how long a quota gate's in-flight lease lives (default
// DefaultLease; at least 1ms). Set it above the longest call a permit covers:
// a lease that expires under a running call frees its slot early. Breaker
// gates do not use it, but refuse an invalid one as every gate does.
func WithLease(d time.Duration) Option {
	return func(o *options) { o.lease = d }
}

func buildOptions(opts []Option) (options, error) {
	o := options{prefix: DefaultPrefix, lease: DefaultLease}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.prefix == "" || strings.ContainsAny(o.prefix, "{}") {
		return o, &ArgumentError{Name: "prefix", Value: o.prefix, Legal: "non-empty, without '{' or '}'"}
	}
	if o.lease < time.Millisecond {
		return o, &ArgumentError{Name: "lease", Value: o.lease.String(), Legal: "≥ 1ms"}
	}
	return o, nil
}

// ArgumentError reports an invalid argument or option of a constructor in
// this package: which one, its value, and what is legal.
type ArgumentError struct {
	// Name is the argument or option at fault ("prefix", "lease", …).
	Name string
	// Value is the value given, as text.
	Value string
	// Legal says what values are accepted.
	Legal string
}

// Error names the argument, its value and the legal values.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("pgw/gate/redis: invalid %s %q (legal: %s)", e.Name, e.Value, e.Legal)
}
