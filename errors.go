package pgw

import (
	"time"

	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/transport"
)

// The public errors of pgw. Every error the gateway returns that is one of
// these is of the type defined here — %T prints *pgw.CircuitOpenError — and
// errors.As into these types also works on errors that come straight from
// the lower packages (config.FromEnv's *ConfigError, an Observer's event
// errors). Every one carries a stable Code().
//
// Call-level versus task-level retry: all retrying, backoff,
// fail-over and waiting a call needs happens inside the library. The errors
// that end a call — CircuitOpenError, AllSourcesExhausted,
// GatewayUnavailableError — mean that its call-level budget is spent (or, with
// fail_fast, that the scope chose not to spend it). A caller that re-submits
// the work later is doing task-level retry, a different decision.

// CircuitOpenError (PGW-CB-OPEN): every source of the scope was rejected by
// its circuit breaker (or by this process's memo of a breaker cooldown) and
// CIRCUIT_OPEN is fail_fast (the default). With CIRCUIT_OPEN=wait the call
// waits instead, within its stall budget. A source held off by an upstream's
// Retry-After is not an open circuit: see AllSourcesExhausted.
type CircuitOpenError struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Sources are the scope's sources, all of them rejected.
	Sources []string
	// RetryAfter is the time until the certain earliest moment a source can
	// be admitted again (the minimum over the sources); 0 means no certain
	// wait, e.g. every source is HalfOpen with a probe in flight that may
	// answer at any moment. A caller that re-submits uses it as its delay.
	RetryAfter time.Duration
	// Last is the error of the call's last attempt when it made any before
	// every source was rejected (e.g. the 401 that opened the breaker); nil
	// otherwise. Unwrap returns it.
	Last error
}

// Error implements the error interface.
func (e *CircuitOpenError) Error() string {
	return (&errs.CircuitOpenError{Scope: e.Scope, Sources: e.Sources, RetryAfter: e.RetryAfter, Last: e.Last}).Error()
}

// Code returns "PGW-CB-OPEN".
func (e *CircuitOpenError) Code() string { return CodeCircuitOpen }

// Unwrap returns Last.
func (e *CircuitOpenError) Unwrap() error { return e.Last }

// AllSourcesExhausted (PGW-EXHAUSTED): no source could run — at once with
// QUOTA_FULL=fail_fast (Reason "quota_exhausted": some source was held back
// by its quota, its pacer or an upstream's Retry-After), or after the stall
// budget was spent (Reason "stalled").
type AllSourcesExhausted struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Reason is ReasonQuotaExhausted or ReasonStalled.
	Reason string
	// Reasons maps each source to why it was not admitted: "cooldown",
	// "circuit_open", "rate_limited", "retry_after" or "adaptive_paced" —
	// or, for a call stalled while its attempts kept failing, the class of
	// the source's last failed attempt ("failure", "throttle", …). It is
	// never empty.
	Reasons map[string]string
	// RetryAfter is the time until the earliest moment some source could
	// certainly be admitted, when the rejecting gates know one (a quota's
	// refill, an upstream's Retry-After, a breaker's cooldown); 0 means no
	// certain wait.
	RetryAfter time.Duration
	// Last is the error of the call's last attempt when it made any; nil
	// otherwise. Unwrap returns it.
	Last error
}

// Error implements the error interface.
func (e *AllSourcesExhausted) Error() string {
	return (&errs.AllSourcesExhausted{Scope: e.Scope, Reason: e.Reason, Reasons: e.Reasons, RetryAfter: e.RetryAfter, Last: e.Last}).Error()
}

// Code returns "PGW-EXHAUSTED".
func (e *AllSourcesExhausted) Code() string { return CodeExhausted }

// Unwrap returns Last.
func (e *AllSourcesExhausted) Unwrap() error { return e.Last }

// GatewayUnavailableError (PGW-UNAVAILABLE): MAX_ATTEMPTS attempts failed, or
// the backoff after a failed attempt would end at or after the caller's ctx
// deadline, so that no further attempt could start in time.
type GatewayUnavailableError struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Attempts is the number of attempts made.
	Attempts int
	// Last is the last attempt's error. Unwrap returns it.
	Last error
}

// Error implements the error interface.
func (e *GatewayUnavailableError) Error() string {
	return (&errs.GatewayUnavailableError{Scope: e.Scope, Attempts: e.Attempts, Last: e.Last}).Error()
}

// Code returns "PGW-UNAVAILABLE".
func (e *GatewayUnavailableError) Code() string { return CodeUnavailable }

// Unwrap returns Last.
func (e *GatewayUnavailableError) Unwrap() error { return e.Last }

// BatchFailure is one failed part of a BatchError: the inputs [Start, End)
// of an embedding request, or the page Start of an OCR request (End =
// Start + 1).
type BatchFailure struct {
	// Start and End bound the failed part: input or page indexes
	// [Start, End) of the call's request.
	Start, End int
	// Err is the part's error (a *GatewayUnavailableError, a
	// *CircuitOpenError, a caller error, …).
	Err error
}

// BatchError (PGW-PARTIAL): some parts of a split call (embedding
// sub-batches, OCR pages) failed; the others' results are returned with it.
// Each part was its own governed call. Unwrap returns every failed part's
// error, so errors.As reaches them.
type BatchError struct {
	// Scope is the scope of the call, e.g. "EMBEDDING".
	Scope string
	// Total is the number of inputs (or pages) of the call.
	Total int
	// Failed lists the failed parts in input order.
	Failed []BatchFailure
}

// Error implements the error interface.
func (e *BatchError) Error() string {
	in := &errs.BatchError{Scope: e.Scope, Total: e.Total, Failed: make([]errs.BatchFailure, len(e.Failed))}
	for i, f := range e.Failed {
		in.Failed[i] = errs.BatchFailure(f)
	}
	return in.Error()
}

// Code returns "PGW-PARTIAL".
func (e *BatchError) Code() string { return CodePartial }

// Unwrap returns every failed part's error.
func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

// HTTPError (PGW-HTTP) is an upstream HTTP failure. The default transports
// return it; return it from a Call function or a custom transport so the
// gateway classifies the failure by status: 429 throttles (and its
// RetryAfter holds the source off), 5xx and other statuses fail over,
// 401/402/403 and an exhausted quota open the breaker, 400/404/413/422 go
// back to the caller at once.
type HTTPError struct {
	// StatusCode is the upstream's HTTP status.
	StatusCode int
	// RetryAfter is the upstream's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Message is the upstream's error text, trimmed; never credentials.
	Message string
	// Scope and Source name where the failure came from; the gateway fills
	// them in when they are empty.
	Scope, Source string
	// Path is the request's URL path, without the query (which may hold a
	// credential), when the transport knows it.
	Path string
}

// Error implements the error interface.
func (e *HTTPError) Error() string { return (*errs.HTTPError)(e).Error() }

// Code returns "PGW-HTTP".
func (e *HTTPError) Code() string { return CodeHTTP }

// HTTPStatus returns StatusCode; with RetryAfterHint it is how the gateway
// recognises an upstream HTTP failure.
func (e *HTTPError) HTTPStatus() int { return e.StatusCode }

// RetryAfterHint returns RetryAfter.
func (e *HTTPError) RetryAfterHint() time.Duration { return e.RetryAfter }

// WithOrigin returns a copy of e naming scope and source; e itself when it
// names them already. The gateway calls it on an attempt's error, and never
// modifies e, which may be shared.
func (e *HTTPError) WithOrigin(scope, source string) error {
	if e == nil || e.Scope != "" || e.Source != "" {
		return e
	}
	c := *e
	c.Scope, c.Source = scope, source
	return &c
}

// ConfigProblem is one invalid key of a ConfigError.
type ConfigProblem struct {
	// Key is the environment key, e.g. "CHAT__COOLDOWN_S". Settings built in
	// code are reported under the key that would have set the field.
	Key string
	// Value is the offending value as given, or "<redacted>" for a secret
	// (and for any unknown key, which may be a mistyped secret).
	Value string
	// Legal says what the key accepts, and for an unknown key what was
	// probably meant.
	Legal string
	// Unset is true when the key is required but not set; Value is then
	// empty.
	Unset bool
}

// String renders the problem as KEY="value" (legal: …), or KEY unset
// (legal: …).
func (p ConfigProblem) String() string { return errs.Problem(p).String() }

// ConfigError (PGW-CONFIG) lists every problem of a configuration at once —
// bad values, unknown and mistyped keys, missing required keys, rules
// between keys — so that one failed start shows everything to fix. Secrets
// never appear in it.
type ConfigError struct {
	// Problems holds one entry per problem, sorted by key.
	Problems []ConfigProblem
}

// Error lists every problem, sorted by key, on one line.
func (e *ConfigError) Error() string {
	in := &errs.ConfigError{Problems: make([]errs.Problem, len(e.Problems))}
	for i, p := range e.Problems {
		in.Problems[i] = errs.Problem(p)
	}
	return in.Error()
}

// Code returns "PGW-CONFIG".
func (e *ConfigError) Code() string { return CodeConfig }

// Stable error codes, the values of the errors' Code methods.
const (
	CodeCircuitOpen = errs.CodeCircuitOpen
	CodeExhausted   = errs.CodeExhausted
	CodeUnavailable = errs.CodeUnavailable
	CodePartial     = errs.CodePartial
	CodeConfig      = errs.CodeConfig
	CodeHTTP        = "PGW-HTTP"
	// CodeRequest is the code of RequestError: a request refused before
	// admission because it cannot be sent.
	CodeRequest = transport.CodeRequest
)

// The values of AllSourcesExhausted.Reason.
const (
	ReasonQuotaExhausted = errs.ReasonQuotaExhausted
	ReasonStalled        = errs.ReasonStalled
)
