package gate

import (
	"context"
	"time"
)

// Noop is a ProviderGate that always allows (PGW_BREAKER_BACKEND=noop). It
// keeps no state and is safe for concurrent use. Its one record never
// changes: every answer reads Closed at generation 0 with no override.
type Noop struct{}

var _ ProviderGate = Noop{}

// TryEnter always allows.
func (Noop) TryEnter(context.Context, string) (Decision, error) {
	return Decision{Allowed: true, State: Closed}, nil
}

// Record accepts every outcome and stays Closed.
func (Noop) Record(context.Context, string, Decision, Outcome) (Update, error) {
	return Update{Applied: true, State: Closed}, nil
}

// RetryAfter is always 0.
func (Noop) RetryAfter(context.Context, []string) (time.Duration, error) { return 0, nil }

// Snapshot always reports Closed.
func (Noop) Snapshot(context.Context, string) (Snapshot, error) { return Snapshot{State: Closed}, nil }
