package errs

// Call-level versus task-level retry.
//
// Every retry a governed call needs happens inside the library: backoff,
// fail-over to another source, waiting for a cooldown or a quota. The errors
// of this package that end a call — CircuitOpenError, AllSourcesExhausted and
// GatewayUnavailableError — therefore mean that the call-level budget is
// spent (or, with fail_fast, that the scope chose not to spend it). They do
// not invite the caller to wrap the call in a retry loop of its own. A caller
// that re-submits the work later (a queue redelivery, a job rescheduled in an
// hour) is doing task-level retry: a different decision, taken with knowledge
// the library does not have, and it should be rare and slow.

// Error codes, stable across releases: match on Code(), not on messages.
const (
	// CodeCircuitOpen is the code of CircuitOpenError.
	CodeCircuitOpen = "PGW-CB-OPEN"
	// CodeExhausted is the code of AllSourcesExhausted.
	CodeExhausted = "PGW-EXHAUSTED"
	// CodeUnavailable is the code of GatewayUnavailableError.
	CodeUnavailable = "PGW-UNAVAILABLE"
	// CodePartial is the code of BatchError.
	CodePartial = "PGW-PARTIAL"
)
