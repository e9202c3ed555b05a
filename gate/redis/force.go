package redis

import (
	"context"
	"errors"
	"strconv"

	"github.com/pgw-go/pgw/gate"
)

// scriptForce applies an operator's override: common.lua + force.lua.
var scriptForce = newScript("force.lua")

var (
	_ gate.Forcer = (*Breaker)(nil)
	_ gate.Forcer = (*Failover)(nil)
)

// Force applies an operator's override to source's record, as gate.Forcer
// documents, in one script and one round trip: ForceOpen holds it Open with
// no end (RetryAfter 0), ForceClosed holds it Closed (outcomes counted,
// nothing trips), ForceNone clears the override and resets the record to a
// fresh Closed one. Every Force starts a new generation and drops every probe
// lease. A forced record keeps no TTL until ForceNone gives it back, so an
// override does not vanish while nobody calls the source.
func (b *Breaker) Force(ctx context.Context, source string, f gate.Force) error {
	if !f.Valid() {
		return &gate.ForceError{Source: source, Force: f}
	}
	args := make([]any, 0, len(b.policy)+1)
	args = append(args, b.policy...)
	args = append(args, strconv.Itoa(int(f)))
	if err := runScript(ctx, b.c, scriptForce, b.Keys(source), args...).Err(); err != nil {
		return wrapErr(ctx, "Force", source, err)
	}
	return nil
}

// errNoForcer is returned by Failover.Force when its primary gate cannot
// force states.
var errNoForcer = errors.New("pgw/gate/redis: Failover.Force: the primary gate does not implement gate.Forcer")

// Force forwards the override to the primary gate (Redis), in either mode:
// an operator's override must reach the shared record, so while Redis is
// unreachable it fails with an error matching ErrUnreachable instead of
// forcing only this process's fallback.
func (f *Failover) Force(ctx context.Context, source string, fo gate.Force) error {
	p, ok := f.primary.(gate.Forcer)
	if !ok {
		return errNoForcer
	}
	return p.Force(ctx, source, fo)
}
