package pgw

import "github.com/pgw-go/pgw/internal/errs"

// The public errors of pgw. Each is a type alias of the type the lower
// packages (admission, retry, config) return, so errors.As works the same
// with either name. Every one carries a stable Code().
//
// Call-level versus task-level retry: all retrying, backoff,
// fail-over and waiting a call needs happens inside the library. The errors
// that end a call — CircuitOpenError, AllSourcesExhausted,
// GatewayUnavailableError — mean that its call-level budget is spent (or, with
// fail_fast, that the scope chose not to spend it). A caller that re-submits
// the work later is doing task-level retry, a different decision.
type (
	// CircuitOpenError (PGW-CB-OPEN): every source of the scope was rejected
	// by its breaker and CIRCUIT_OPEN is fail_fast (the default). RetryAfter
	// follows the pinned contract: 0 means no certain wait.
	CircuitOpenError = errs.CircuitOpenError
	// AllSourcesExhausted (PGW-EXHAUSTED): no source could run — at once with
	// QUOTA_FULL=fail_fast (Reason "quota_exhausted"), or after the stall
	// budget was spent (Reason "stalled"); Reasons holds each source's reason.
	AllSourcesExhausted = errs.AllSourcesExhausted
	// GatewayUnavailableError (PGW-UNAVAILABLE): MAX_ATTEMPTS attempts
	// failed; Unwrap returns the last attempt's error.
	GatewayUnavailableError = errs.GatewayUnavailableError
	// BatchError (PGW-PARTIAL): some parts of a split call (embedding
	// sub-batches, OCR pages) failed; the others' results are returned with
	// it. Unwrap returns every failed part's error.
	BatchError = errs.BatchError
	// BatchFailure is one failed part of a BatchError.
	BatchFailure = errs.BatchFailure
	// HTTPError (PGW-HTTP) is an upstream HTTP failure, returned by a
	// transport or a Call function so the gateway classifies it by status.
	HTTPError = errs.HTTPError
	// ConfigError (PGW-CONFIG) lists every invalid configuration key with
	// its value (secrets redacted) and what is legal.
	ConfigError = errs.ConfigError
	// ConfigProblem is one invalid key of a ConfigError.
	ConfigProblem = errs.Problem
)

// Stable error codes, the values of the errors' Code methods.
const (
	CodeCircuitOpen = errs.CodeCircuitOpen
	CodeExhausted   = errs.CodeExhausted
	CodeUnavailable = errs.CodeUnavailable
	CodePartial     = errs.CodePartial
	CodeConfig      = errs.CodeConfig
)

// The values of AllSourcesExhausted.Reason.
const (
	ReasonQuotaExhausted = errs.ReasonQuotaExhausted
	ReasonStalled        = errs.ReasonStalled
)
