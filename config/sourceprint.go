package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// plainSource is Source without its printing methods.
type plainSource Source

// printable is s as it may be printed: the API key is a Secret already, and
// BASE_URL loses its user info and query, which may hold credentials.
func (s Source) printable() plainSource {
	p := plainSource(s)
	p.BaseURL = redactURL(s.BaseURL)
	return p
}

// Format implements fmt.Formatter: every verb prints the source with its
// BASE_URL redacted (RedactedBaseURL) and its API key hidden, also when the
// source is printed inside Settings or ScopeSettings.
func (s Source) Format(f fmt.State, verb rune) {
	var b strings.Builder
	b.WriteByte('%')
	for _, flag := range "+-# 0" {
		if f.Flag(int(flag)) {
			b.WriteRune(flag)
		}
	}
	b.WriteRune(verb)
	out := fmt.Sprintf(b.String(), s.printable())
	if verb == 'v' && f.Flag('#') {
		out = "config.Source" + strings.TrimPrefix(out, "config.plainSource")
	}
	_, _ = f.Write([]byte(out))
}

// LogValue implements slog.LogValuer with the redacted form.
func (s Source) LogValue() slog.Value { return slog.AnyValue(s.printable()) }

// MarshalJSON implements json.Marshaler with the redacted form. There is no
// UnmarshalJSON: a redacted source cannot be read back.
func (s Source) MarshalJSON() ([]byte, error) { return json.Marshal(s.printable()) }
