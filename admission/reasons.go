package admission

import "time"

// Reason is why Pick did not admit a source.
type Reason string

// The rejection reasons, in the order Pick checks them (a hold-off is found
// where a cooldown is). Cooldown and CircuitOpen are gate rejections; the
// others are not.
const (
	// Cooldown: the memo says the source is cooling down in this process.
	Cooldown Reason = "cooldown"
	// CircuitOpen: the breaker rejected (Open, or HalfOpen with its probe
	// slots taken).
	CircuitOpen Reason = "circuit_open"
	// RateLimited: the quota gate rejected (RPM, TPM or in-flight).
	RateLimited Reason = "rate_limited"
	// AdaptivePaced: the AIMD pacer's window for the source is full.
	AdaptivePaced Reason = "adaptive_paced"
	// HeldOff: the upstream answered 429 with a Retry-After that has not
	// passed; the source's breaker is not open. Like RateLimited it is a
	// throttle, governed by QUOTA_FULL, and its RetryAfter is certain.
	HeldOff Reason = "retry_after"
)

// Gate reports whether r is a gate rejection (cooldown or circuit_open), the
// kind the CIRCUIT_OPEN policy governs.
func (r Reason) Gate() bool { return r == Cooldown || r == CircuitOpen }

// Rejection is one source Pick did not admit.
type Rejection struct {
	// Source names the source that was not admitted.
	Source string
	// Reason is the stage that rejected it.
	Reason Reason
	// RetryAfter is the certain earliest wait the rejecting stage reported:
	// the memo's remaining cooldown, the breaker's RetryAfter (the contract
	// of package gate), the quota's RetryAfter; 0 when unknown (a probe in
	// flight, an in-flight slot, the pacer).
	RetryAfter time.Duration
}

// Rejections are the sources one Pick round did not admit, in the order it
// tried them.
type Rejections []Rejection

// AllGate reports whether every rejection is a gate rejection (and there is
// at least one).
func (rs Rejections) AllGate() bool {
	for _, r := range rs {
		if !r.Reason.Gate() {
			return false
		}
	}
	return len(rs) > 0
}

// Sources returns the rejected sources' names, in order.
func (rs Rejections) Sources() []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Source
	}
	return out
}

// Map returns source → reason, the form errors and logs carry.
func (rs Rejections) Map() map[string]string {
	out := make(map[string]string, len(rs))
	for _, r := range rs {
		out[r.Source] = string(r.Reason)
	}
	return out
}

// earliest is the smallest RetryAfter among the rejections: the first moment
// at which some source could certainly be admitted (0: maybe at any moment).
func (rs Rejections) earliest() time.Duration {
	least := time.Duration(-1)
	for _, r := range rs {
		if least < 0 || r.RetryAfter < least {
			least = r.RetryAfter
		}
	}
	return max(least, 0)
}
