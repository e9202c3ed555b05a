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
// observer, and recovers a panic of f: the rest of f is dropped, and the
// panic is logged at Warn on log as msg with args and "panic", the panic's
// value as redact returns it (nil: its text with every echoed credential
// header redacted). It reports whether f panicked.
//
// f must leave the invariants of its work kept even when it panics (give
// its admissions back from defers): Run only keeps the goroutine alive.
func Run(log *slog.Logger, msg string, redact func(p any) string, f func(), args ...any) (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			if log == nil {
				log = slog.Default()
			}
			if redact == nil {
				redact = Redact(nil)
			}
			log.Warn(msg, append(args[:len(args):len(args)], "panic", redact(p))...)
		}
	}()
	f()
	return false
}

// Redact returns a redact for Run: the panic's text with creds and every
// echoed credential header redacted.
func Redact(creds []string) func(p any) string {
	return func(p any) string { return provider.RedactText(fmt.Sprint(p), creds) }
}
