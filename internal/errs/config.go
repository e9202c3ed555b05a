package errs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CodeConfig is the stable code of a ConfigError.
const CodeConfig = "PGW-CONFIG"

// Problem is one invalid configuration key.
type Problem struct {
	// Key is the environment key, e.g. "CHAT__COOLDOWN_S". Settings built in
	// code are reported under the key that would have set the field.
	Key string
	// Value is the offending value as given, or "<redacted>" for a secret.
	Value string
	// Legal says what the key accepts.
	Legal string
	// Unset is true when the key is not set at all (a required key that is
	// missing); Value is then empty.
	Unset bool
}

// String renders the problem as KEY="value" (legal: …), or KEY unset
// (legal: …) for a key that is not set.
func (p Problem) String() string {
	if p.Unset {
		return p.Key + " unset (legal: " + p.Legal + ")"
	}
	return p.Key + "=" + strconv.Quote(p.Value) + " (legal: " + p.Legal + ")"
}

// ConfigError lists every invalid key of a configuration at once, so that one
// failed start shows everything to fix. Secrets never appear in it.
type ConfigError struct {
	// Problems holds one entry per invalid key (a key may appear more than
	// once when it breaks several rules).
	Problems []Problem
}

// Code returns "PGW-CONFIG".
func (e *ConfigError) Code() string { return CodeConfig }

// Error lists every problem, sorted by key, on one line.
func (e *ConfigError) Error() string {
	ps := slices.Clone(e.Problems)
	SortProblems(ps)
	var b strings.Builder
	fmt.Fprintf(&b, "pgw: invalid configuration (%d %s)", len(ps), plural(len(ps)))
	for i, p := range ps {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// SortProblems sorts ps by key, then by legal text, so that output is stable.
func SortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Legal, b.Legal)
	})
}

func plural(n int) string {
	if n == 1 {
		return "problem"
	}
	return "problems"
}
