package gate

import "time"

// Decision is the answer of ProviderGate.TryEnter. An allowed decision must be
// handed back to Record exactly once, with the call's Outcome.
type Decision struct {
	// Allowed reports whether the call may run now.
	Allowed bool
	// State is the breaker state at the moment of the decision.
	State State
	// RetryAfter follows the pinned contract of the package documentation.
	RetryAfter time.Duration
	// Probe reports that the call holds a HalfOpen probe lease.
	Probe bool
	// Token is the fencing token: the generation for a Closed admission, the
	// lease token for a probe. Record uses it to ignore stale outcomes.
	Token uint64
	// Generation is the record's generation at the moment of the answer:
	// what Snapshot.Generation would have read at that instant, for every
	// answer, allowed or not. Of two answers about one record the one with
	// the greater generation saw the later state; see "Generations" in the
	// package documentation for where that ordering ends.
	Generation uint64
	// Forced is the operator's override at the moment of the answer
	// (ForceNone when there is none); see Forcer.
	Forced Force
}

// Update is the answer of ProviderGate.Record.
type Update struct {
	// Applied is false on a fencing miss: the outcome changed nothing.
	Applied bool
	// State is the breaker state after the outcome.
	State State
	// RetryAfter follows the pinned contract for the state after the outcome.
	RetryAfter time.Duration
	// Generation is the record's generation after the outcome (a fencing
	// miss reports the current one), as Decision.Generation.
	Generation uint64
	// Forced is the operator's override after the outcome, as
	// Decision.Forced.
	Forced Force
}

// Snapshot is a read-only view of one source's breaker record.
type Snapshot struct {
	// State is the record's state as read (Closed when the record was
	// never written).
	State State
	// Generation grows on every transition.
	Generation uint64
	// ConsecutiveFailures counts failures in a row while Closed.
	ConsecutiveFailures int
	// ProbeSuccesses counts probe successes in the current HalfOpen phase.
	ProbeSuccesses int
	// ProbeFailures counts the probe failures a HalfOpen phase tolerated
	// (Policy.HalfOpenCalls); always 0 without it.
	ProbeFailures int
	// WindowCalls and WindowFailures are the rolling-window counts (0 when
	// the policy has no window).
	WindowCalls    int
	WindowFailures int
	// ProbesInFlight is the number of unexpired probe leases.
	ProbesInFlight int
	// Cooldown is the cooldown the next (or current) Open phase uses.
	Cooldown time.Duration
	// OpenUntil is the end of the current Open phase; zero unless Open.
	OpenUntil time.Time
	// RetryAfter follows the pinned contract; an Open record whose cooldown
	// has passed reports 0, and so does a record forced Open.
	RetryAfter time.Duration
	// Forced is the operator's override (ForceNone when there is none); see
	// Forcer.
	Forced Force
	// Configured and Advertised are filled by the gateway's Snapshot, never
	// by a breaker gate: the source's configured quota, and the budget its
	// upstream last advertised in its rate-limit headers (nil when it
	// advertised nothing).
	Configured Limits
	Advertised *Advertised
}
