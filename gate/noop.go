package gate

import (
	"context"
	"fmt"
	"time"
)

// Noop is a ProviderGate that always allows (PGW_BREAKER_BACKEND=noop). It
// keeps no state and is safe for concurrent use. Its one record never
// changes: every answer reads Closed at generation 0 with no override.
type Noop struct{}

var _ ProviderGate = Noop{}

// TryEnter always allows, except with a ctx already done, which it refuses
// with ctx's error as every ProviderGate does.
func (Noop) TryEnter(ctx context.Context, source string) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, DoneError("TryEnter", source, err)
	}
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

// DoneError returns the error a gate's admission (TryEnter, Acquire,
// Admit) returns when asked with a ctx already done: it names op and
// source and wraps err, ctx's error, so errors.Is finds context.Canceled
// or context.DeadlineExceeded. Backends use it so that every one refuses
// alike.
func DoneError(op, source string, err error) error {
	return fmt.Errorf("pgw/gate: %s %q: not admitted, the caller's context is done: %w", op, source, err)
}
