package gate

import (
	"context"
	"time"
)

// Limits are one source's rate quotas. Zero means unlimited.
type Limits struct {
	// RPM is requests per rolling minute.
	RPM int
	// TPM is tokens per rolling minute (estimates reserved at Acquire,
	// corrected by Settle).
	TPM int
	// MaxInFlight is the number of calls that may run at once.
	MaxInFlight int
}

// Unlimited reports whether l limits nothing.
func (l Limits) Unlimited() bool { return l.RPM == 0 && l.TPM == 0 && l.MaxInFlight == 0 }

// Permit is what a granted Acquire holds. It must be given back with Release
// exactly once (Release of an already released permit is a no-op), and may be
// corrected with Settle.
type Permit struct {
	// Source is the source the permit was granted for.
	Source string
	// ID identifies the permit inside its backend (the in-flight lease).
	ID string
	// Tokens is the token estimate reserved at Acquire.
	Tokens int64
}

// QuotaDecision is the answer of QuotaGate.Acquire.
type QuotaDecision struct {
	// Allowed reports whether a permit was granted.
	Allowed bool
	// RetryAfter is, when rejected, the time until enough capacity will
	// exist for the same request; 0 when unknown (e.g. waiting on in-flight
	// calls to finish). Always 0 when allowed.
	RetryAfter time.Duration
	// Limit names the limit that rejected: "rpm", "tpm" or "in_flight".
	Limit string
}

// QuotaGate is the per-source rate quota port. Implementations are safe for
// concurrent use.
type QuotaGate interface {
	// Acquire reserves one request and estTokens tokens for source and takes
	// an in-flight slot, or rejects with a RetryAfter.
	Acquire(ctx context.Context, source string, estTokens int64) (Permit, QuotaDecision, error)
	// Settle corrects the token account by actualTokens − p.Tokens.
	Settle(ctx context.Context, p Permit, actualTokens int64) error
	// Release frees the permit's in-flight slot.
	Release(ctx context.Context, p Permit) error
}
