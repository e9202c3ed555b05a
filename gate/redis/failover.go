package redis

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Mode says what a Failover does while Redis is unreachable
// (PGW_REDIS_DOWN).
type Mode uint8

const (
	// FailOpen serves from the local fallback gate, logs once per outage and
	// returns to Redis when it answers again (PGW_REDIS_DOWN=fail_open).
	FailOpen Mode = iota + 1
	// FailClosed returns the error, which matches ErrUnreachable and says
	// that Redis is unreachable (PGW_REDIS_DOWN=fail_closed).
	FailClosed
)

// String returns "fail_open" or "fail_closed", the PGW_REDIS_DOWN values.
func (m Mode) String() string {
	switch m {
	case FailOpen:
		return "fail_open"
	case FailClosed:
		return "fail_closed"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode reads a PGW_REDIS_DOWN value.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "fail_open":
		return FailOpen, nil
	case "fail_closed":
		return FailClosed, nil
	}
	return 0, &ArgumentError{Name: "mode", Value: s, Legal: "fail_open, fail_closed"}
}

// DefaultRetryInterval is how often a Failover in an outage lets one call try
// Redis again.
const DefaultRetryInterval = time.Second

// fallbackBit marks, in Decision.Token, a decision the fallback granted, and,
// in the Generation of every answer, an answer of the fallback. Redis tokens
// and generations come from the server's clock in µs (about 2^51) and a
// counter, never near 2^63.
const fallbackBit = uint64(1) << 63

// Failover is a breaker gate that uses a primary gate (a Redis Breaker) and,
// in FailOpen mode, a local fallback gate (a memory breaker with the same
// policy) while the primary returns errors matching ErrUnreachable.
//
// In an outage one call per retry interval tries the primary again; the
// others go straight to the fallback, so a dead or black-holed Redis costs
// one slow call per interval, not one per call. With WithProber, the gateway's
// Prober decides instead: during its outage no call tries the primary (a
// FailClosed Failover then fails at once with ErrUnreachable), and only its
// probes end the outage. The outage is logged once,
// at Warn, when it starts, and once, at Info, when Redis answers again.
//
// Every decision is recorded to the gate that granted it: decisions of the
// fallback carry the top bit of Decision.Token (the bit is stripped before the
// fallback sees the token), so a probe granted locally during an outage is
// still recorded locally after Redis is back. A Record of a Redis decision
// while Redis is unreachable cannot be applied: it returns Applied=false with
// the fallback's state, and a probe lease it held expires in Redis at
// ProbeTTL.
//
// The fallback keeps what it learned between outages. Its generations are
// its own, so the Generation of a Decision or Update the fallback gave carries
// the top bit as well: it never compares with a Redis generation as if both
// counted one record (see "Generations" in package gate). A caller that sees the bit
// come or go reads Snapshot to learn where the Failover stands now. Snapshot
// reports the record it read — Redis, or the fallback during an outage — with
// that record's own generation, unmarked, so that a reader comparing the
// generations of snapshots alone sees Redis's again after an outage.
// Failover starts no goroutine and is safe for concurrent use.
type Failover struct {
	primary  gate.ProviderGate
	fallback gate.ProviderGate
	outage
}

var _ gate.ProviderGate = (*Failover)(nil)

// NewFailover returns a gate that serves from primary and, in FailOpen mode,
// from fallback while primary is unreachable. fallback may be nil for
// FailClosed. logger nil means slog.Default().
func NewFailover(primary, fallback gate.ProviderGate, mode Mode, logger *slog.Logger, opts ...FailoverOption) (*Failover, error) {
	if primary == nil {
		return nil, &ArgumentError{Name: "primary", Value: "<nil>", Legal: "a gate.ProviderGate"}
	}
	switch mode {
	case FailOpen:
		if fallback == nil {
			return nil, &ArgumentError{Name: "fallback", Value: "<nil>", Legal: "a gate.ProviderGate for fail_open"}
		}
	case FailClosed:
	default:
		return nil, &ArgumentError{Name: "mode", Value: mode.String(), Legal: "FailOpen, FailClosed"}
	}
	f := &Failover{primary: primary, fallback: fallback}
	f.init("breaker", mode, logger, opts)
	return f, nil
}

// TryEnter asks the primary, or the fallback during an outage.
func (f *Failover) TryEnter(ctx context.Context, source string) (gate.Decision, error) {
	if f.mode == FailClosed {
		if err := f.outageNow("TryEnter"); err != nil {
			return gate.Decision{}, err
		}
		d, err := f.primary.TryEnter(ctx, source)
		return d, f.closedSettle(err)
	}
	if use, probe := f.usePrimary(); use {
		d, err := f.primary.TryEnter(ctx, source)
		if !f.settle(err, probe) {
			return d, err
		}
	}
	d, err := f.fallback.TryEnter(ctx, source)
	d.Token |= fallbackBit
	d.Generation |= fallbackBit
	return d, err
}

// Record records to the gate that granted d.
func (f *Failover) Record(ctx context.Context, source string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if f.mode == FailClosed {
		u, err := f.primary.Record(ctx, source, d, o)
		return u, f.closedSettle(err)
	}
	if d.Token&fallbackBit != 0 {
		d.Token &^= fallbackBit
		d.Generation &^= fallbackBit
		return fromFallback(f.fallback.Record(ctx, source, d, o))
	}
	if !o.Valid() {
		return gate.Update{}, gate.ErrUnknownOutcome
	}
	// A prober's outage does not skip the Record of a Redis decision: it
	// runs off the caller's path, and the probe or in-flight lease it gives
	// back would otherwise wait for its TTL.
	if use, probe := f.usePrimary(); use || f.pr != nil {
		u, err := f.primary.Record(ctx, source, d, o)
		if !f.settle(err, probe) {
			return u, err
		}
	}
	// The outcome is lost with Redis. A not-allowed decision is always a
	// fencing miss, so this reports the fallback's view without moving it.
	return fromFallback(f.fallback.Record(ctx, source, gate.Decision{}, o))
}

// fromFallback marks an Update of the fallback as the fallback's.
func fromFallback(u gate.Update, err error) (gate.Update, error) {
	if err == nil {
		u.Generation |= fallbackBit
	}
	return u, err
}

// RetryAfter asks the primary, or the fallback during an outage.
func (f *Failover) RetryAfter(ctx context.Context, sources []string) (time.Duration, error) {
	if f.mode == FailClosed {
		if err := f.outageNow("RetryAfter"); err != nil {
			return 0, err
		}
		ra, err := f.primary.RetryAfter(ctx, sources)
		return ra, f.closedSettle(err)
	}
	if use, probe := f.usePrimary(); use {
		ra, err := f.primary.RetryAfter(ctx, sources)
		if !f.settle(err, probe) {
			return ra, err
		}
	}
	return f.fallback.RetryAfter(ctx, sources)
}

// Snapshot reads the primary, or the fallback during an outage.
func (f *Failover) Snapshot(ctx context.Context, source string) (gate.Snapshot, error) {
	if f.mode == FailClosed {
		if err := f.outageNow("Snapshot"); err != nil {
			return gate.Snapshot{}, err
		}
		s, err := f.primary.Snapshot(ctx, source)
		return s, f.closedSettle(err)
	}
	if use, probe := f.usePrimary(); use {
		s, err := f.primary.Snapshot(ctx, source)
		if !f.settle(err, probe) {
			return s, err
		}
	}
	return f.fallback.Snapshot(ctx, source)
}

// LocalDecision reports whether d was granted by the local fallback, so
// that recording it does no I/O.
func (f *Failover) LocalDecision(d gate.Decision) bool {
	return f.mode == FailOpen && d.Token&fallbackBit != 0
}
