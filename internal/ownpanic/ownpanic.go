// Package ownpanic recovers the panics of a user's observer on the
// goroutines pgw starts itself.
//
// An observer's method that panics on the goroutine of the call that
// reported to it panics that call: the panic goes on to the caller, who may
// recover it. On a goroutine pgw started — a hedged attempt that lost its
// race, the outcome writer, the hook that closes a stream when its ctx ends
// — no caller can, and the panic would end the process. There pgw runs the
// reports through Run, which recovers the panic and logs it.
package ownpanic

import (
	"fmt"
	"log/slog"

	"github.com/pgw-go/pgw/provider"
)

// Msg is the log line of an observer's panic recovered by Run.
const Msg = "pgw: an observer panicked on a goroutine of pgw's own (no caller could recover it); the panic is dropped"

// Run runs f, work of a goroutine pgw started that reports to a user's
// observer about scope's source (empty: the scope's), and recovers a panic
// of f: the rest of f is dropped, and the panic is logged at Warn on log as
// Msg with the scope, the source and "panic", the panic's value as redact
// returns it (nil: its text with every echoed credential header
// redacted). It reports whether f panicked. Nothing is computed for the
// log unless f panicked: redact runs then, and may look the credentials
// up.
//
// f must leave the invariants of its work kept even when it panics (give
// its admissions back from defers): Run only keeps the goroutine alive.
func Run(log *slog.Logger, redact func(p any) string, f func(), scope, source string) (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			logPanic(log, redact, p, scope, source)
		}
	}()
	f()
	return false
}

// logPanic logs the panic p that Run recovered.
func logPanic(log *slog.Logger, redact func(p any) string, p any, scope, source string) {
	if log == nil {
		log = slog.Default()
	}
	if redact == nil {
		redact = Redact(nil)
	}
	args := []any{"scope", scope}
	if source != "" {
		args = append(args, "source", source)
	}
	log.Warn(Msg, append(args, "panic", redact(p))...)
}

// Redact returns a redact for Run: the panic's text with creds and every
// echoed credential header redacted.
func Redact(creds []string) func(p any) string {
	return func(p any) string { return provider.RedactText(fmt.Sprint(p), creds) }
}
