package redis

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the key prefix when WithPrefix is not given
// (PGW_REDIS_PREFIX's default).
const DefaultPrefix = "pgw"

// Option configures a Redis gate.
type Option func(*options)

type options struct {
	prefix string
}

// WithPrefix sets the prefix of every key the gate writes (default "pgw"),
// so several deployments can share one Redis. It must be non-empty and free
// of '{' and '}', which would move the hash tag.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

func buildOptions(opts []Option) (options, error) {
	o := options{prefix: DefaultPrefix}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.prefix == "" || strings.ContainsAny(o.prefix, "{}") {
		return o, &ArgumentError{Name: "prefix", Value: o.prefix, Legal: "non-empty, without '{' or '}'"}
	}
	return o, nil
}

// ArgumentError reports an invalid argument or option of a constructor in
// this package: which one, its value, and what is legal.
type ArgumentError struct {
	Name  string
	Value string
	Legal string
}

// Error names the argument, its value and the legal values.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("pgw/gate/redis: invalid %s %q (legal: %s)", e.Name, e.Value, e.Legal)
}
