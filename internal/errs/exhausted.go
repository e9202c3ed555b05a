package errs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The values of AllSourcesExhausted.Reason.
const (
	// ReasonQuotaExhausted: nothing could run, at least one source was held
	// back by its quota or pacer, and the scope's QUOTA_FULL policy is
	// fail_fast.
	ReasonQuotaExhausted = "quota_exhausted"
	// ReasonStalled: the call waited out its stall budget (STALL_WINDOW_S)
	// and no call of its scope delivered a success within that window.
	ReasonStalled = "stalled"
)

// AllSourcesExhausted ends a call when no source could run: either at once
// (QUOTA_FULL=fail_fast, Reason "quota_exhausted") or after waiting out the
// stall budget (Reason "stalled"). Reasons says why each source was held back
// on the last admission round.
//
// "stalled" means the call-level stall budget is spent: all waiting the
// library does for one call is behind it (see the package's note on
// call-level versus task-level retry).
type AllSourcesExhausted struct {
	// Scope is the scope of the call, e.g. "CHAT".
	Scope string
	// Reason is ReasonQuotaExhausted or ReasonStalled.
	Reason string
	// Reasons maps each source to why it was not admitted: "cooldown",
	// "circuit_open", "rate_limited", "retry_after" or "adaptive_paced" —
	// or, for a call stalled while its attempts kept failing, the class
	// of the source's last failed attempt ("failure", "throttle", …). It
	// is never empty.
	Reasons map[string]string
	// RetryAfter is the earliest moment, from the error, at which some
	// source could certainly be admitted, when the rejecting gates know one
	// (a quota's refill, an advertised budget's reset, an upstream's
	// Retry-After, a breaker's cooldown); 0 means no certain wait.
	RetryAfter time.Duration
	// Last is the error of the call's last attempt when it made any; nil
	// otherwise. Unwrap returns it.
	Last error
}

// Unwrap returns Last.
func (e *AllSourcesExhausted) Unwrap() error { return e.Last }

// Code returns "PGW-EXHAUSTED".
func (e *AllSourcesExhausted) Code() string { return CodeExhausted }

// Error implements the error interface.
func (e *AllSourcesExhausted) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pgw: scope %q: all sources exhausted (%s)", e.Scope, e.Reason)
	for i, src := range slices.Sorted(maps.Keys(e.Reasons)) {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(src + "=" + e.Reasons[src])
	}
	if e.RetryAfter > 0 {
		b.WriteString("; retry after " + e.RetryAfter.String())
	}
	if e.Last != nil {
		b.WriteString("; last attempt: " + e.Last.Error())
	}
	return b.String()
}
