package gate

import "context"

// Admitter is a QuotaGate that can run a breaker's TryEnter and its own
// Acquire as one operation — on Redis one script and one round trip instead
// of two. Admission uses it when the scope's quota gate implements it and
// accepts the scope's breaker; both backends implement it, and the contract
// suite (contracttest.RunAdmit) pins it to TryEnter followed by Acquire,
// with the decision given back as Record(Released) when Acquire rejects.
type Admitter interface {
	// Admit asks b.TryEnter(source) and, when b allows, reserves as
	// Acquire(source, estTokens) would. When b rejects, the quota is not
	// asked (qd and p are zero). When the quota rejects, d has already been
	// given back, exactly as Record(Released) would (a probe lease is
	// freed; nothing else changes), so the caller must not record it; the
	// quota reserved nothing. ok is false, with nothing done, when b is not
	// a breaker this gate can combine with: the caller then calls TryEnter
	// and Acquire itself. Errors are those of TryEnter and Acquire; with an
	// error nothing is held.
	Admit(ctx context.Context, b ProviderGate, source string, estTokens int64) (d Decision, p Permit, qd QuotaDecision, ok bool, err error)
}
