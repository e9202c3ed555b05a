package gate

import (
	"context"
	"time"
)

// Limit names of a BudgetDecision, beside LimitRPM, LimitTPM and
// LimitInFlight of the configured quotas.
const (
	LimitAdvertisedRequests = "advertised_requests"
	LimitAdvertisedTokens   = "advertised_tokens"
)

// AdvertisedWindow is one limit window an upstream advertises in its
// rate-limit headers (requests or tokens).
type AdvertisedWindow struct {
	// Limit is the window's size; -1 when unknown.
	Limit int64
	// Remaining is what is left of it; -1 when unknown. In an answer, the
	// upstream's figure; in a BudgetGate's state, what admissions may still
	// take.
	Remaining int64
	// Reset is how long until the window is whole again (in an answer,
	// measured from the answer; in a state, from the read). 0 in a state
	// means the window was whole again at its last reset and no answer
	// has said since when the next one is: the budget is the limit less
	// what was taken since.
	Reset time.Duration
}

// Known reports whether the window's remaining is known.
func (w AdvertisedWindow) Known() bool { return w.Remaining >= 0 }

// Advertised is what one upstream answer advertised about a source's
// request and token windows, or a BudgetGate's state of them.
type Advertised struct {
	// Requests and Tokens are the request and token windows; a window
	// nothing was said about is UnknownWindow.
	Requests, Tokens AdvertisedWindow
}

// UnknownWindow is an AdvertisedWindow that says nothing.
var UnknownWindow = AdvertisedWindow{Limit: -1, Remaining: -1}

// BudgetDecision is the answer of BudgetGate.Take.
type BudgetDecision struct {
	// Allowed reports whether the budget had room; it then holds one
	// request and the tokens less.
	Allowed bool
	// RetryAfter is, when rejected, the time until the window resets and
	// the budget is its limit again: a certain wait. 0 when the reset is
	// not known (a newer answer may refill the budget at any moment).
	RetryAfter time.Duration
	// Limit is LimitAdvertisedRequests or LimitAdvertisedTokens when
	// rejected; empty when allowed.
	Limit string
}

// BudgetGate keeps, per source, the latest rate-limit figures the
// upstream advertised — shared by every process on the same backend — as a
// budget: Take reserves one request and estTokens tokens against it, as
// the quota does against the configured limits, until a newer answer
// refreshes it (Refresh); at the reset the budget is the advertised limit
// again, less what is taken from then on, so the processes together send no
// more than it allows. A source nothing was advertised for is not limited.
// Implementations are safe for concurrent use.
//
// The rules, alike in every backend, per window:
//   - At its reset, a window's remaining becomes its limit and its reset
//     unknown (0) until an answer tells the next one.
//   - Refresh keeps the smaller of the budget and the advertised
//     remaining (answers do not count the calls still in flight), and the
//     later of the two resets. Right after a reset, an answer whose reset
//     falls within half a window of the reset just passed is a late answer
//     of the window that ended, and is not taken.
//   - Take rejects when a known window has less than the cost left (one
//     request; the tokens, at most the window's limit).
//   - A source's figures are forgotten a window (at least a second) plus
//     a second after their last write (an admitted Take or a Refresh), or
//     after the latest reset they know when that is later: a window spent
//     after its reset by calls that brought no answer back holds the
//     source off no longer than that.
type BudgetGate interface {
	// Take reserves one request and estTokens tokens of source's budget,
	// or rejects (Allowed false) with the wait until the window resets; a
	// source nothing was advertised for is always allowed.
	Take(ctx context.Context, source string, estTokens int64) (BudgetDecision, error)
	// Refresh merges the figures of one upstream answer into source's
	// budget, by the rules above.
	Refresh(ctx context.Context, source string, a Advertised) error
	// Read returns source's budget as it stands; ok false when nothing is
	// advertised for it.
	Read(ctx context.Context, source string) (a Advertised, ok bool, err error)
}
