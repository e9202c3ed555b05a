package gate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Limits are one source's rate quotas. Zero means unlimited; negative values
// are invalid (Validate). RPM and TPM are rolling: each is a bucket that holds
// a minute's allowance and refills continuously at limit/60 s, the model the
// upstream providers themselves use (ARCHITECTURE.md, "Quotas and pacing").
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

// MaxInFlightLimit is the largest legal Limits.MaxInFlight.
const MaxInFlightLimit = 1 << 24

// Validate reports every invalid field of l in one *LimitsError naming the
// source, the field, its value and what is legal.
func (l Limits) Validate(source string) error {
	if bad := l.problems(source); len(bad) > 0 {
		return &LimitsError{Problems: bad}
	}
	return nil
}

// RateLegal reports whether v is a legal RPM or TPM: 0 (unlimited) or a
// positive rate both backends count exactly.
func RateLegal(v int) bool {
	return v == 0 || v > 0 && NewRate(v).Capacity <= maxRateCapacity
}

// MaxPlainRate is the largest RPM or TPM the quota gates count exactly
// whatever its value; above it, only multiples of 1000 are legal.
const MaxPlainRate = maxPlainRate

// RateLegalText says which RPM and TPM values RateLegal accepts.
func RateLegalText() string {
	return fmt.Sprintf("0 for unlimited, 1..%d, or a multiple of 1000 up to %d; other larger values cannot be counted exactly",
		maxPlainRate, maxPlainRate*1000)
}

func (l Limits) problems(source string) []string {
	var bad []string
	add := func(field string, v int, legal string) {
		bad = append(bad, fmt.Sprintf("source %q: %s=%d (legal: %s)", source, field, v, legal))
	}
	for _, r := range []struct {
		field string
		v     int
	}{{"RPM", l.RPM}, {"TPM", l.TPM}} {
		switch {
		case r.v < 0:
			add(r.field, r.v, "≥ 0, 0 for unlimited")
		case !RateLegal(r.v):
			add(r.field, r.v, RateLegalText())
		}
	}
	if l.MaxInFlight < 0 || l.MaxInFlight > MaxInFlightLimit {
		add("MaxInFlight", l.MaxInFlight, fmt.Sprintf("0..%d, 0 for unlimited", MaxInFlightLimit))
	}
	return bad
}

// ValidateLimits validates every source's limits and reports all problems,
// sorted by source, in one *LimitsError; nil when all are valid.
func ValidateLimits(limits map[string]Limits) error {
	var bad []string
	for _, src := range slices.Sorted(maps.Keys(limits)) {
		bad = append(bad, limits[src].problems(src)...)
	}
	if len(bad) == 0 {
		return nil
	}
	return &LimitsError{Problems: bad}
}

// LimitsError lists every invalid field of a set of quota limits, each with
// its source, value and what is legal.
type LimitsError struct {
	// Problems has one entry per invalid field.
	Problems []string
}

// Error implements the error interface.
func (e *LimitsError) Error() string {
	return "pgw/gate: invalid quota limits: " + strings.Join(e.Problems, "; ")
}

// TokensError reports a token count Acquire or Settle cannot accept: a
// negative count, or an estimate larger than the source's whole TPM, which no
// wait could ever admit.
type TokensError struct {
	// Op is "Acquire", "Settle" or "Finish".
	Op string
	// Source is the permit's or request's source.
	Source string
	// Tokens is the rejected count.
	Tokens int64
	// TPM is the source's TPM limit (0: unlimited).
	TPM int
}

// Error implements the error interface.
func (e *TokensError) Error() string {
	arg := "estTokens"
	if e.Op != "Acquire" {
		arg = "actualTokens"
	}
	legal := "≥ 0"
	if e.TPM > 0 && e.Op == "Acquire" {
		legal = fmt.Sprintf("0..%d, the source's TPM", e.TPM)
	}
	return fmt.Sprintf("pgw/gate: quota %s for source %q: %s=%d (legal: %s)", e.Op, e.Source, arg, e.Tokens, legal)
}

// The exact integer form of a rolling per-minute limit. Time is counted in
// microseconds (the resolution of Redis TIME). A limit of n per minute drains
// n/60e6 units per µs, which is rarely an integer; scaling every unit by
// U = 60e6/g, with g = gcd(n, 60e6), makes the drain D = n/g per µs and the
// cost of one unit U, both integers. The bucket then holds at most
// Capacity = n·U = D·60e6 scaled units. Both backends (Go and Lua) do the same
// integer arithmetic on these numbers, so they decide alike to the µs.
const (
	microsPerMinute = 60_000_000
	// maxRateCapacity keeps level + cost + debt (≤ 3 × Capacity) below 2^53,
	// where Lua's doubles stop being exact integers.
	maxRateCapacity = 1 << 50
	maxPlainRate    = maxRateCapacity / microsPerMinute // 18764998
)

// Rate is the exact integer form of a per-minute limit shared by the memory
// and Redis quota gates; see NewRate.
type Rate struct {
	// Drain is how many scaled units leave the bucket per microsecond.
	Drain int64
	// Unit is the scaled cost of one request or token.
	Unit int64
	// Capacity is one minute's allowance in scaled units (limit × Unit).
	Capacity int64
}

// NewRate returns the Rate of a limit of perMinute requests or tokens per
// minute; the zero Rate (unlimited) for perMinute ≤ 0.
func NewRate(perMinute int) Rate {
	if perMinute <= 0 {
		return Rate{}
	}
	n := int64(perMinute)
	g := gcd(n, microsPerMinute)
	return Rate{Drain: n / g, Unit: microsPerMinute / g, Capacity: n * (microsPerMinute / g)}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Permit is what a granted Acquire holds. It must be given back with Release
// exactly once (Release of an already released permit is a no-op), and may be
// corrected with Settle once, before or after Release.
type Permit struct {
	// Source is the source the permit was granted for.
	Source string
	// ID identifies the permit's in-flight lease inside a backend that names
	// leases with strings (Redis); empty otherwise.
	ID string
	// Lease identifies the in-flight lease inside a backend that numbers
	// them (memory); 0 otherwise. Opaque to callers.
	Lease uint64
	// Tokens is the token estimate reserved at Acquire.
	Tokens int64
}

// Limit names, the values of QuotaDecision.Limit.
const (
	LimitRPM      = "rpm"
	LimitTPM      = "tpm"
	LimitInFlight = "in_flight"
)

// QuotaDecision is the answer of QuotaGate.Acquire.
type QuotaDecision struct {
	// Allowed reports whether a permit was granted.
	Allowed bool
	// RetryAfter is, when rejected, the time until the rate limits (RPM,
	// TPM) will admit the same request: exact — a retry at RetryAfter finds
	// the capacity, one earlier does not. It is 0 when only MaxInFlight
	// rejected (a slot frees whenever a call ends: no certain wait); when
	// both a rate limit and MaxInFlight reject, it is the rate limit's wait,
	// a certain lower bound. Always 0 when allowed, never negative.
	RetryAfter time.Duration
	// Limit names the limit that rejected: LimitRPM, LimitTPM or
	// LimitInFlight; the one that sets RetryAfter when several reject.
	// Empty when allowed.
	Limit string
}

// QuotaGate is the per-source rate quota port (RPM, TPM, in-flight). A source with no
// Limits, or zero Limits, is unlimited. Implementations are safe for
// concurrent use. A rejected Acquire reserves nothing.
type QuotaGate interface {
	// Acquire reserves one request and estTokens tokens for source and takes
	// an in-flight slot, all or nothing, or rejects with a RetryAfter. A
	// negative estTokens, or one above the source's TPM, is a *TokensError.
	// A ctx already done is refused with an error wrapping ctx's error and
	// reserves nothing, also for an unlimited source.
	Acquire(ctx context.Context, source string, estTokens int64) (Permit, QuotaDecision, error)
	// Settle corrects the token account by actualTokens − p.Tokens: a
	// refund when the call used fewer tokens than estimated, a debit (which
	// may push the account beyond a minute's allowance) when it used more.
	// A negative actualTokens is a *TokensError.
	Settle(ctx context.Context, p Permit, actualTokens int64) error
	// Release frees the permit's in-flight slot. Releasing a permit twice,
	// or a zero Permit, does nothing.
	Release(ctx context.Context, p Permit) error
}

// Finisher is a QuotaGate that can give a permit back in one operation:
// Finish settles p to actualTokens and releases its in-flight slot, with the
// same effect as Settle followed by Release, in one Redis round trip where
// the two would take two. Like Settle, it is called once per permit. A
// negative actualTokens is a *TokensError, and nothing is released.
type Finisher interface {
	// Finish settles p to actualTokens and releases it, as one operation.
	Finish(ctx context.Context, p Permit, actualTokens int64) error
}

// Finish gives p back to q once its call ended: settled to actualTokens
// (unless it is negative: the estimate stands) and released. It uses q's
// Finish when q is a Finisher, otherwise Settle then Release; the slot is
// released even when the settlement fails, and both errors are returned.
func Finish(ctx context.Context, q QuotaGate, p Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return q.Release(ctx, p)
	}
	if f, ok := q.(Finisher); ok {
		return f.Finish(ctx, p, actualTokens)
	}
	errSettle := q.Settle(ctx, p, actualTokens)
	return errors.Join(errSettle, q.Release(ctx, p))
}
