package config

import (
	"fmt"
	"log/slog"
)

// Redacted is what a Secret shows instead of its value, everywhere: fmt verbs,
// slog, JSON, and the values of ConfigError problems.
const Redacted = "<redacted>"

// Secret holds a credential (an API key, a Redis URL that may carry a
// password) so that it cannot leak by accident: every fmt verb (%v, %+v,
// %#v, %s, %q, %x, %d …), slog and encoding/json show Redacted, or "" for an
// empty secret. Only Reveal returns the value.
//
// The value sits behind a pointer, so even reflection-based printing of a
// struct that holds a Secret in an unexported field shows an address, never
// the text. Compare secrets with Reveal, not ==. The zero Secret is empty.
// A Secret is immutable and safe for concurrent use.
type Secret struct {
	v *string
}

// NewSecret wraps s. NewSecret("") is the empty secret.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{v: &s}
}

// Reveal returns the secret's value. Call it only where the value is sent to
// its destination (an Authorization header, a Redis dial), never to log it.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.v != nil && *s.v != "" }

// String returns Redacted, or "" for an empty secret.
func (s Secret) String() string {
	if !s.IsSet() {
		return ""
	}
	return Redacted
}

// GoString returns a Go-syntax form that hides the value.
func (s Secret) GoString() string {
	if !s.IsSet() {
		return "config.Secret{}"
	}
	return `config.NewSecret("` + Redacted + `")`
}

// Format implements fmt.Formatter so that no verb, including the ones that
// would otherwise print the raw bytes (%x, %d), shows the value.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(s.GoString()))
	case verb == 'q':
		_, _ = fmt.Fprintf(f, "%q", s.String())
	default:
		_, _ = f.Write([]byte(s.String()))
	}
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText implements encoding.TextMarshaler (and so JSON) with the
// redacted form. There is deliberately no UnmarshalText: a round trip through
// text would lose the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
