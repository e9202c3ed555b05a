package gate

import (
	"context"
	"time"
)

// ProviderGate is the per-source circuit breaker port. Implementations are safe
// for concurrent use and follow the state machine and RetryAfter contract of
// the package documentation.
type ProviderGate interface {
	// TryEnter asks whether a call to source may run now. A ctx already
	// done is refused with an error wrapping ctx's error, and nothing is
	// taken (no probe lease): a caller that gave up is not admitted.
	TryEnter(ctx context.Context, source string) (Decision, error)
	// Record reports the outcome of a call admitted by d.
	Record(ctx context.Context, source string, d Decision, o Outcome) (Update, error)
	// RetryAfter is the minimum over sources of each source's RetryAfter
	// (Open: openUntil − now; Closed or HalfOpen: 0). It moves no state.
	RetryAfter(ctx context.Context, sources []string) (time.Duration, error)
	// Snapshot reads one source's record without moving it.
	Snapshot(ctx context.Context, source string) (Snapshot, error)
}
