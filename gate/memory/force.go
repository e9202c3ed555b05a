package memory

import (
	"context"
	"time"

	"github.com/pgw-go/pgw/gate"
)

var _ gate.Forcer = (*Breaker)(nil)

// Force applies an operator's override to source's record, as gate.Forcer
// documents: ForceOpen holds it Open with no end (RetryAfter 0), ForceClosed
// holds it Closed (outcomes counted, nothing trips), ForceNone clears the
// override and resets the record to a fresh Closed one, ForceHalfOpen clears
// it and starts a fresh HalfOpen phase. Every Force starts a
// new generation and drops every probe lease, so decisions granted before it
// are stale.
func (b *Breaker) Force(_ context.Context, source string, f gate.Force) error {
	if !f.Valid() {
		return &gate.ForceError{Source: source, Force: f}
	}
	r := b.record(source)
	r.mu.Lock()
	defer r.unlock()
	r.newGeneration()
	r.forced = f
	r.consecFails = 0
	r.probeOK = 0
	r.probeFail = 0
	r.win.reset()
	r.leases = r.leases[:0]
	// A forced Open has no end: a zero openUntil makes remaining() 0.
	r.openUntil = time.Time{}
	if f == gate.ForceOpen {
		r.state = gate.Open // the cooldown stays for after the release
		return nil
	}
	if f == gate.ForceHalfOpen {
		// A one-off move: no override is held, the cooldown stays so that
		// a failed probe grows it.
		r.forced = gate.ForceNone
		r.state = gate.HalfOpen
		return nil
	}
	r.state = gate.Closed
	r.cooldown = b.p.Cooldown
	return nil
}
