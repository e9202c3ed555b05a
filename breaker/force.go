package breaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgw-go/pgw/gate"
)

// ErrCannotForce is matched (errors.Is) by the error of Open, Close,
// HalfOpen and Force when the breaker's gate does not implement
// gate.Forcer. Both pgw gates implement it.
var ErrCannotForce = errors.New("pgw/breaker: the gate cannot force states (it does not implement gate.Forcer)")

// Open holds the breaker Open until Close, HalfOpen or another Force: every
// call is rejected with RetryAfter 0 (there is no certain end). It is the
// gate's ForceOpen, so with a shared gate every process sharing the name is
// held open. Open uses context.Background; see Force for a context.
func (b *Breaker) Open() error { return b.Force(context.Background(), gate.ForceOpen) }

// Close resets the breaker to a fresh Closed record that runs by its policy
// again: it lifts an Open or Close hold, drops every probe lease, clears the
// gate's counts and the cooldown growth, and starts the Counts again. It is
// the gate's ForceNone. Close uses context.Background; see Force.
func (b *Breaker) Close() error { return b.Force(context.Background(), gate.ForceNone) }

// HalfOpen moves the breaker to a fresh HalfOpen phase at once, as if its
// cooldown had just ended, lifting any hold: the next calls are probes and
// their outcomes close or re-open it by the policy. It is the gate's
// ForceHalfOpen. HalfOpen uses context.Background; see Force.
func (b *Breaker) HalfOpen() error { return b.Force(context.Background(), gate.ForceHalfOpen) }

// Force applies f to the breaker's record in its gate (see gate.Forcer:
// ForceOpen and ForceClosed hold a state until the next Force, ForceNone
// resets, ForceHalfOpen starts a probe phase), then observes the result, so
// listeners hear of the change before Force returns. It fails, changing
// nothing, when the gate cannot force states (ErrCannotForce) or f is not a
// defined value, and with the gate's error when the gate cannot be reached.
func (b *Breaker) Force(ctx context.Context, f gate.Force) error {
	fg, ok := b.gate.(gate.Forcer)
	if !ok {
		return fmt.Errorf("pgw/breaker: breaker %q: gate %T: %w", b.name, b.gate, ErrCannotForce)
	}
	if err := fg.Force(ctx, b.name, f); err != nil {
		return fmt.Errorf("pgw/breaker: breaker %q: force %v: %w", b.name, f, err)
	}
	b.reconcile(ctx)
	return nil
}
