package errs

import "fmt"

// GatewayUnavailableError ends a call whose attempt budget (MAX_ATTEMPTS) is
// spent: every attempt failed (5xx, timeout, connection error, fatal
// credentials …) and the library has already backed off and failed over
// between them. It also ends a call at once when the backoff after a failed
// attempt would end at or after the caller's ctx deadline: no attempt could
// follow, and sleeping would only turn the last error into
// context.DeadlineExceeded. Last is the last attempt's error; errors.As reaches it
// through Unwrap (e.g. a *HTTPError with the upstream status).
//
// This marks the end of call-level retry, which lives entirely inside the
// library. Catching it to re-submit the same call at once only repeats what
// the library just did; re-submitting later is task-level retry — a separate
// decision for the caller (see the package's note).
type GatewayUnavailableError struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Attempts is the number of attempts made.
	Attempts int
	// Last is the last attempt's error.
	Last error
}

// Code returns "PGW-UNAVAILABLE".
func (e *GatewayUnavailableError) Code() string { return CodeUnavailable }

// Error implements the error interface.
func (e *GatewayUnavailableError) Error() string {
	return fmt.Sprintf("pgw: scope %q: gateway unavailable after %d attempts: %v", e.Scope, e.Attempts, e.Last)
}

// Unwrap returns Last.
func (e *GatewayUnavailableError) Unwrap() error { return e.Last }
