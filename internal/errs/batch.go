package errs

import (
	"fmt"
	"strings"
)

// BatchFailure is one part of a split call that failed: the inputs
// [Start, End) of an embedding request, or the page Start of an OCR request
// (End = Start + 1).
type BatchFailure struct {
	// Start and End bound the failed part: input or page indexes
	// [Start, End) of the call's request.
	Start, End int
	// Err is the part's error (a *GatewayUnavailableError, a
	// *CircuitOpenError, a caller error, …).
	Err error
}

// BatchError reports the parts of a split call (embedding sub-batches, OCR
// pages) that failed while others succeeded: the results of the successful
// parts are returned alongside it, not thrown away. Each part was its own
// governed call with its own retries. errors.As reaches every part's error
// through Unwrap.
type BatchError struct {
	// Scope is the scope of the call, e.g. "EMBEDDING".
	Scope string
	// Total is the number of inputs (or pages) of the call.
	Total int
	// Failed lists the failed parts in input order.
	Failed []BatchFailure
}

// Code returns "PGW-PARTIAL".
func (e *BatchError) Code() string { return CodePartial }

// Error implements the error interface.
func (e *BatchError) Error() string {
	var b strings.Builder
	failed := 0
	for _, f := range e.Failed {
		failed += f.End - f.Start
	}
	fmt.Fprintf(&b, "pgw: scope %q: %d of %d inputs failed", e.Scope, failed, e.Total)
	for i, f := range e.Failed {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "[%d,%d): %v", f.Start, f.End, f.Err)
	}
	return b.String()
}

// Unwrap returns every failed part's error.
func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}
