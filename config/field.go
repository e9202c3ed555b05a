package config

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// field is one row of the validation tables: how to read a key's text into a
// field of T and how to check the field's effective value. Both paths — env
// text and Settings built in code — use the same bounds and the same legal
// text, so they cannot drift apart.
type field[T any] struct {
	// suffix is the key without its scope/source prefix (the whole key for
	// the PGW_ globals).
	suffix string
	legal  string
	// load parses raw env text into t. It returns false, leaving t
	// untouched, when the text is illegal.
	load func(t *T, raw string) bool
	// check reports whether t's effective value is legal, and that value
	// formatted as it would be written in the environment.
	check func(t *T) (shown string, ok bool)
	// show formats raw env text for a Problem; nil shows it as given.
	show func(raw string) string
	// detail, when set, says why raw env text is illegal; it is appended to
	// the legal text.
	detail func(raw string) string
}

// legalFor is the legal text of a Problem about raw env text.
func (f field[T]) legalFor(raw string) string {
	if f.detail != nil {
		if d := f.detail(raw); d != "" {
			return f.legal + " (" + d + ")"
		}
	}
	return f.legal
}

func (f field[T]) shown(raw string) string {
	if f.show != nil {
		return f.show(raw)
	}
	return clip(raw)
}

// Bounds. Durations are whole milliseconds or more (the gates' resolution)
// and small enough that the arithmetic of the gates cannot overflow; counts
// stay within int32 for the same reason.
const (
	minDuration = time.Millisecond
	maxDuration = 10_000_000 * time.Second
	maxCount    = math.MaxInt32
	maxWeight   = 1_000_000
)

var legalSeconds = "seconds (fractions allowed) in [0.001, 10000000]"

func durationField[T any](suffix string, ptr func(*T) *time.Duration) field[T] {
	return field[T]{
		suffix: suffix,
		legal:  legalSeconds,
		load: func(t *T, raw string) bool {
			d, ok := parseSeconds(raw)
			if ok {
				*ptr(t) = d
			}
			return ok
		},
		check: func(t *T) (string, bool) {
			d := *ptr(t)
			return formatSeconds(d), d >= minDuration && d <= maxDuration
		},
	}
}

func intField[T any](suffix string, ptr func(*T) *int, lo, hi int, note string) field[T] {
	legal := "integer in [" + strconv.Itoa(lo) + ", " + strconv.Itoa(hi) + "]" + note
	return field[T]{
		suffix: suffix,
		legal:  legal,
		load: func(t *T, raw string) bool {
			n, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil || n < lo || n > hi {
				return false
			}
			*ptr(t) = n
			return true
		},
		check: func(t *T) (string, bool) {
			n := *ptr(t)
			return strconv.Itoa(n), n >= lo && n <= hi
		},
	}
}

func enumField[T any, E ~string](suffix string, ptr func(*T) *E, legal ...E) field[T] {
	names := make([]string, len(legal))
	for i, e := range legal {
		names[i] = string(e)
	}
	return field[T]{
		suffix: suffix,
		legal:  strings.Join(names, ", "),
		load: func(t *T, raw string) bool {
			e := E(strings.TrimSpace(raw))
			if !slices.Contains(legal, e) {
				return false
			}
			*ptr(t) = e
			return true
		},
		check: func(t *T) (string, bool) {
			e := *ptr(t)
			return string(e), slices.Contains(legal, e)
		},
	}
}

// parseSeconds reads a count of seconds such as "60" or "0.05". NaN, ±Inf and
// values outside [minDuration, maxDuration] are illegal.
func parseSeconds(raw string) (time.Duration, bool) {
	sec, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	// The negated comparison also rejects NaN.
	if err != nil || !(sec >= minDuration.Seconds() && sec <= maxDuration.Seconds()) {
		return 0, false
	}
	d := time.Duration(math.Round(sec * float64(time.Second)))
	return d, d >= minDuration && d <= maxDuration
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// clip shortens a value shown in a Problem so that one pasted blob cannot
// swamp the message.
func clip(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// splitList splits a comma list, trimming spaces around each item. An empty
// text yields one empty item, which callers report.
func splitList(raw string) []string {
	items := strings.Split(raw, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
	}
	return items
}

// hasControl reports whether s holds a control character (a newline left by
// a key file, an escape), or leading or trailing white space.
func hasControl(s string) bool {
	if strings.TrimSpace(s) != s {
		return true
	}
	return strings.ContainsFunc(s, unicode.IsControl)
}

// boolField is a true/false key; only those two words (any case) are legal.
func boolField[T any](suffix string, ptr func(*T) *bool) field[T] {
	return field[T]{
		suffix: suffix,
		legal:  "true, false",
		load: func(t *T, raw string) bool {
			switch strings.ToLower(strings.TrimSpace(raw)) {
			case "true":
				*ptr(t) = true
			case "false":
				*ptr(t) = false
			default:
				return false
			}
			return true
		},
		check: func(t *T) (string, bool) { return strconv.FormatBool(*ptr(t)), true },
	}
}
