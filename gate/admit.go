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
	// error nothing is held. A ctx already done is refused as TryEnter
	// refuses it: nothing is taken.
	Admit(ctx context.Context, b ProviderGate, source string, estTokens int64) (d Decision, p Permit, qd QuotaDecision, ok bool, err error)
}

// BudgetAdmitter is an Admitter that can also take the advertised budget
// (a BudgetGate) in the same operation — on Redis the budget's key shares
// the source's slot, so admission stays one script and one round trip even
// for a source whose answers advertise rate limits. Admission uses it when
// the scope's quota gate implements it and accepts both the breaker and the
// budget.
type BudgetAdmitter interface {
	// AdmitBudget is Admit followed, when the quota reserved, by
	// budget.Take(source, estTokens), all or nothing: a budget rejection
	// is reported in qd as the budget's (Limit LimitAdvertisedRequests or
	// LimitAdvertisedTokens, RetryAfter the reset), with d given back as
	// for a quota rejection and nothing reserved. ok is false, with
	// nothing done, when b or budget is not one this gate can combine
	// with: the caller then admits and takes the budget itself.
	AdmitBudget(ctx context.Context, b ProviderGate, budget BudgetGate, source string, estTokens int64) (d Decision, p Permit, qd QuotaDecision, ok bool, err error)
}

// Conclusion is one admission to give back through a Concluder: the breaker
// decision with its outcome, and the quota permit with the tokens the call
// actually used. Conclude fills in Update and Err.
type Conclusion struct {
	// Source is the admitted source.
	Source string
	// Decision is the breaker's admission; Outcome the call's result.
	Decision Decision
	Outcome  Outcome
	// Permit is the quota permit, when HasPermit.
	Permit Permit
	// HasPermit reports that the admission holds a quota permit to finish;
	// false gives back the breaker decision alone.
	HasPermit bool
	// Tokens is the tokens the call used; negative: the estimate stands
	// (the permit is released without a settlement, as Finish does).
	Tokens int64
	// Update is the breaker's answer, as Record returns it.
	Update Update
	// Err is the give-back's error, nil when both parts were written.
	Err error
}

// Concluder is a QuotaGate that can give admissions back in one operation
// each: the breaker's Record and its own Finish together — on Redis one
// script per admission in one slot, and a batch of them in one pipeline. Each
// conclusion has the effect of b.Record(Source, Decision, Outcome) followed,
// when HasPermit, by Finish(Permit, Tokens). ok is false, with nothing done,
// when b is not a breaker this gate can combine with: the caller then
// records and finishes each itself.
type Concluder interface {
	// Conclude gives back every conclusion of cs, filling in each one's
	// Update and Err; an error is its own conclusion's, and the others
	// are still written.
	Conclude(ctx context.Context, b ProviderGate, cs []Conclusion) (ok bool)
}
