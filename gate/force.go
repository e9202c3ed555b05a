package gate

import (
	"context"
	"fmt"
)

// Force is an operator's override of one source's breaker (pgw open|close|
// reset). The zero value, ForceNone, means no override.
type Force uint8

// The overrides.
const (
	// ForceNone clears any override and resets the record: Closed, counts
	// and window cleared, cooldown back to Policy.Cooldown, every probe
	// lease dropped, a new generation. It is how a forced state is released.
	ForceNone Force = iota
	// ForceOpen holds the source Open until the override is cleared.
	ForceOpen
	// ForceClosed holds the source Closed until the override is cleared:
	// outcomes are still counted, but nothing trips it.
	ForceClosed
	// ForceHalfOpen is a one-off move, not a held override: it clears any
	// override and puts the source in a fresh HalfOpen phase at once, as
	// if its cooldown had just ended. The next TryEnter gets a probe; the
	// phase then runs by the policy (its outcomes close or re-open it, a
	// failed probe growing the cooldown the record had).
	ForceHalfOpen
)

// String returns "none", "open", "closed" or "half_open".
func (f Force) String() string {
	switch f {
	case ForceNone:
		return "none"
	case ForceOpen:
		return "open"
	case ForceClosed:
		return "closed"
	case ForceHalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("force(%d)", uint8(f))
}

// Valid reports whether f is one of the defined values.
func (f Force) Valid() bool { return f <= ForceHalfOpen }

// ParseForce reads "open", "closed" (or "close"), "none" (or "reset") and
// "half_open" (or "half-open").
func ParseForce(s string) (Force, error) {
	switch s {
	case "open":
		return ForceOpen, nil
	case "closed", "close":
		return ForceClosed, nil
	case "none", "reset":
		return ForceNone, nil
	case "half_open", "half-open":
		return ForceHalfOpen, nil
	}
	return 0, fmt.Errorf("pgw/gate: unknown force %q (legal: open, closed, none, half_open)", s)
}

// Forcer is the optional operator port of a breaker gate: a ProviderGate that
// also implements it lets an operator pin a source's state. Both pgw backends
// implement it; contracttest.RunBreakerForce pins what it does.
// Implementations are safe for concurrent use.
//
// What a forced state does to the contract of the package documentation:
//
//   - Force itself is a transition: the record gets a new generation and every
//     probe lease is dropped, so every decision granted before it is stale.
//     Forcing twice starts a new generation each time.
//   - ForceOpen: State Open with no end. TryEnter rejects with RetryAfter 0 —
//     there is no certain moment: an operator may lift the override at any
//     time, so a waiting caller keeps polling instead of sleeping through a
//     made-up cooldown. Record is always a fencing miss (Applied false, State
//     Open, RetryAfter 0), Fatal included: the record is already as open as
//     it gets. RetryAfter(sources) counts the source as 0. Snapshot reports
//     State Open, Forced ForceOpen, RetryAfter 0 and a zero OpenUntil. The
//     record never moves to HalfOpen.
//   - ForceClosed: State Closed with a fresh count. TryEnter always admits
//     (RetryAfter 0); Record counts Success and Failure as in Closed (Fatal
//     counts as a Failure), with the usual fencing, but nothing trips the
//     record. Snapshot reports Forced ForceClosed with the counts, so an
//     operator sees what the source would have done.
//   - ForceHalfOpen: not held. The override is cleared (Forced reads
//     ForceNone afterwards) and the record is a fresh HalfOpen phase with a
//     new generation: no leases, no probe outcomes, consecutive count and
//     window cleared, the cooldown kept. TryEnter then grants probes as
//     after a cooldown, and the record runs by the policy again.
//   - ForceNone: the override is cleared and the record reset to a fresh
//     Closed one (cooldown back to Policy.Cooldown); the breaker then runs
//     by the policy again. Generations keep growing across the reset, so
//     fencing stays sound.
//
// A forced record does not expire: backends that give records a TTL (Redis)
// keep a forced record until ForceNone, since an override that vanished on
// its own would surprise the operator who set it.
type Forcer interface {
	// Force applies f to source's record. An f outside the defined values
	// returns an error naming it and changes nothing.
	Force(ctx context.Context, source string, f Force) error
}

// ForceError reports a Force value outside ForceNone, ForceOpen,
// ForceClosed and ForceHalfOpen.
type ForceError struct {
	// Source is the source Force was asked to override.
	Source string
	// Force is the value that is not a defined Force.
	Force Force
}

// Error names the source, the value and the legal values.
func (e *ForceError) Error() string {
	return fmt.Sprintf("pgw/gate: Force(%q): unknown force %d (legal: 0 none, 1 open, 2 closed, 3 half_open)", e.Source, uint8(e.Force))
}
