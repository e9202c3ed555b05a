package errs

import (
	"fmt"
	"strings"
	"time"
)

// CircuitOpenError ends a call when every source of its scope was rejected by
// its circuit breaker (or by this process's cooldown memo) and the scope's
// CIRCUIT_OPEN policy is fail_fast, the default. With CIRCUIT_OPEN=wait the
// call waits instead, within its stall budget.
//
// It is a call-level verdict (see the package's note on call-level versus
// task-level retry): the library did not retry because the scope asked it to
// fail fast. RetryAfter tells a caller that re-submits when that could first
// succeed.
type CircuitOpenError struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Sources are the scope's sources, all of them rejected.
	Sources []string
	// RetryAfter follows the pinned contract of package gate: the time until
	// the certain earliest moment a source can be admitted again (the
	// minimum over the sources); 0 means no certain wait, e.g. every source
	// is HalfOpen with a probe in flight that may answer at any moment.
	RetryAfter time.Duration
	// Last is the error of the call's last attempt when it made any before
	// every source was rejected (e.g. the 401 that opened the breaker); nil
	// otherwise. Unwrap returns it.
	Last error
}

// Unwrap returns Last.
func (e *CircuitOpenError) Unwrap() error { return e.Last }

// Code returns "PGW-CB-OPEN".
func (e *CircuitOpenError) Code() string { return CodeCircuitOpen }

// Error implements the error interface.
func (e *CircuitOpenError) Error() string {
	// RetryAfter 0 is a probe in flight or an operator's override: a
	// source forced open (pgw open) rejects with no certain wait too, and
	// an operator reading this must not go looking for a probe.
	wait := "no certain wait (a probe is in flight) or a source forced open until an operator resets it"
	if e.RetryAfter > 0 {
		wait = "retry after " + e.RetryAfter.String()
	}
	msg := fmt.Sprintf("pgw: scope %q: circuit open on every source (%s); %s",
		e.Scope, strings.Join(e.Sources, ", "), wait)
	if e.Last != nil {
		msg += "; last attempt: " + e.Last.Error()
	}
	return msg
}
