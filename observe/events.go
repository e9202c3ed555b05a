package observe

import (
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/transport"
)

// The values of AttemptRecord.Outcome: the retry classes (retry.Class
// names), plus OutcomeAbandoned, OutcomeClosed, OutcomePanic and
// OutcomeHedgeLost.
const (
	OutcomeSuccess     = "success"
	OutcomeFailure     = "failure"
	OutcomeThrottle    = "throttle"
	OutcomeFatal       = "fatal"
	OutcomeCallerError = "caller_error"
	// OutcomeCanceled: the caller's context ended the attempt (its
	// cancellation or deadline), or, in a hedge race, another attempt's
	// caller error ended the call while it ran and it was cut; nothing is
	// counted against the source.
	OutcomeCanceled = "canceled"
	// OutcomeAbandoned: the caller closed a stream before its end; or a
	// panic that went on to the caller (an observer's, or another attempt's
	// of its hedge race) ended the call while the attempt ran, and the
	// attempt was cut and given back, Released.
	OutcomeAbandoned = "abandoned"
	// OutcomeClosed: the gateway's Close ended the attempt; like a
	// cancellation, nothing is counted against the source.
	OutcomeClosed = "closed"
	// OutcomePanic: the attempt panicked; the panic went on to the caller.
	OutcomePanic = "panic"
)

// Measured reports whether an attempt that ended with outcome ran until its
// source answered — delivered, failed, throttled, rejected the request, or
// ran out its timeout — so that its AttemptRecord.Latency is a time of the
// source. It is false for an attempt cut short before that: by its
// caller's context or the gateway's Close (OutcomeCanceled, OutcomeClosed:
// the time says how long the caller waited), by another attempt's caller
// error that ended its hedge race (OutcomeCanceled: how long the race
// took), by its caller closing the stream (OutcomeAbandoned: how long the
// caller read), or by a hedge race another attempt won (OutcomeHedgeLost:
// how long the race took). Such a time is only a lower bound of the
// source's, and no figure of it at all when the caller gave up early. It
// is false too for an attempt that panicked (OutcomePanic): its time says
// when the code it ran — the caller's function, an SDK, an observer —
// broke, before or after a request went out, nothing of the source.
// observe/prom and observe/otel count these attempts by outcome and leave
// their time out of their duration histograms. The retry loop leaves it out
// of a source's latency too, but for one case: a hedge race's loser that
// ran a whole hedge delay joins its source's latency as a lower bound (it
// keeps the slow tail that the race cut short). A time to first chunk
// (AttemptRecord.FirstChunk) that was reached is the source's whatever
// ended the attempt after it.
func Measured(outcome string) bool {
	switch outcome {
	case OutcomeCanceled, OutcomeClosed, OutcomeAbandoned, OutcomeHedgeLost, OutcomePanic:
		return false
	}
	return true
}

// The values of CallResult.Result.
const (
	// ResultSuccess: the call delivered (for a chat stream: to its end).
	ResultSuccess = "success"
	// ResultCircuitOpen: every source was behind an open breaker and the
	// scope fails fast (CircuitOpenError).
	ResultCircuitOpen = "circuit_open"
	// ResultQuotaExhausted: no source had quota and the scope fails fast.
	ResultQuotaExhausted = "quota_exhausted"
	// ResultStalled: the call waited out its stall budget.
	ResultStalled = "stalled"
	// ResultUnavailable: MAX_ATTEMPTS attempts failed.
	ResultUnavailable = "unavailable"
	// ResultCallerError: the upstream rejected the request itself (400,
	// 404, 413, 422), or the gateway refused it before admission because
	// it cannot be sent (a *transport.RequestError; Attempts 0, no
	// Source).
	ResultCallerError = "caller_error"
	// ResultCanceled: the caller's context ended the call.
	ResultCanceled = "canceled"
	// ResultAbandoned: a chat stream was closed before its end.
	ResultAbandoned = "abandoned"
	// ResultClosed: the gateway's Close ended the call (it returned
	// pgw.ErrClosed); the caller's context was still live.
	ResultClosed = "closed"
	// ResultError: anything else — a gate that could not answer, a stream
	// cut after its first chunk.
	ResultError = "error"
)

// AttemptStart is an admitted attempt beginning on a source.
type AttemptStart struct {
	// Scope and Source name where the attempt runs.
	Scope, Source string
	// Attempt is the attempt's number within its call, from 1.
	Attempt int
	// Probe reports that the attempt holds a HalfOpen probe lease.
	Probe bool
	// At is when it began.
	At time.Time
	// Operation is the call's: one of the Operation… constants, empty for
	// a custom function.
	Operation string
	// Model is the model the attempt asks for: the caller's, or else the
	// source's configured one; empty when neither names one.
	Model string
	// BaseURL is the source's configured base URL without its user info
	// and query, which may hold credentials (config.RedactURL).
	BaseURL string
	// Provider is the source's API dialect ("openai", "azure",
	// "anthropic"); empty means OpenAI-compatible.
	Provider string
	// Priority is the source's priority tier.
	Priority int
	// State is the source's breaker state in the answer that admitted the
	// attempt.
	State gate.State
}

// AttemptRecord is one finished attempt of a governed call on one source.
type AttemptRecord struct {
	// Scope and Source name where the attempt ran.
	Scope, Source string
	// Attempt is the attempt's number within its call, from 1. Each part
	// of a split call (embedding sub-batch, OCR page) is a call of its own.
	Attempt int
	// Outcome is how the attempt was classified: one of the Outcome…
	// constants.
	Outcome string
	// Err is the attempt's error; nil on success.
	Err error
	// Status is the upstream's HTTP status when the attempt failed with
	// one; 0 otherwise.
	Status int
	// RetryAfter is the upstream's Retry-After (a 429's); 0 when none.
	RetryAfter time.Duration
	// Probe reports that the attempt held a HalfOpen probe lease.
	Probe bool
	// Start is when the attempt began; Latency how long it ran (for a chat
	// stream: until the stream ended).
	Start   time.Time
	Latency time.Duration
	// FirstChunk is, for a chat attempt that delivered a chunk, the time to
	// its first chunk; 0 otherwise.
	FirstChunk time.Duration
	// Usage is the token count the upstream reported (zero if none).
	Usage transport.Usage
}

// Counts are one process's outcomes recorded for one source between two
// state changes it saw.
type Counts struct {
	// Successes, Failures, Fatal and Released count the outcomes the
	// breaker applied, by kind (gate.Success, gate.Failure, gate.Fatal,
	// gate.Released: a call that said nothing about the source, such as a
	// caller error, a cancellation or a 429). Outcomes the breaker did not
	// apply (a stale decision) are not counted.
	Successes uint64
	Failures  uint64
	Fatal     uint64
	Released  uint64
	// ConsecutiveFailures is the run of Failure and Fatal outcomes that
	// ended the period (0 when the last outcome was a success).
	ConsecutiveFailures uint64
}

// StateChange is a breaker transition of one source as this process saw it
// in a gate answer (TryEnter, Record). With a shared gate it may have been
// made by another process or an operator. Changes between two observations
// are reported as one change from the last state seen to the current one;
// a change is never invented.
//
// Its fields come from the gate answer that showed the change, so reporting
// it costs no gate operation; for the rest of the record (cooldown, counts,
// leases) read the gate's Snapshot.
type StateChange struct {
	// Scope and Source name the breaker record.
	Scope, Source string
	// From and To are the states before and after.
	From, To gate.State
	// Generation is the record's generation after the change; it grows on
	// every transition (a Redis record that expired while idle reads 0 again
	// until its next transition; redis.Failover's fallback answers carry the
	// top bit, see "Generations" in package gate).
	Generation uint64
	// Forced is the operator's override after the change (gate.Forcer).
	Forced gate.Force
	// RetryAfter is the gate's RetryAfter in the new state when the change
	// was seen: for Open, the time until the cooldown ends (the whole
	// cooldown when seen in the answer that opened it); forced Open, 0;
	// otherwise 0.
	RetryAfter time.Duration
	// Counts are this process's outcomes for the source since the previous
	// change it saw: the counts that caused this one (the gate cleared its
	// own at the transition).
	Counts Counts
	// At is when the change was seen.
	At time.Time
}

// Rejection is one source an admission round did not admit.
type Rejection struct {
	// Scope and Source name the source.
	Scope, Source string
	// Reason is why: "cooldown", "circuit_open", "rate_limited",
	// "retry_after" (an upstream's Retry-After holds the source off) or
	// "adaptive_paced" (admission.Reason).
	Reason string
	// Limit names the limit that rejected when Reason is "rate_limited":
	// the quota's "rpm", "tpm" or "in_flight", or the window of the budget
	// the upstream advertised, "advertised_requests" or
	// "advertised_tokens" (gate.Limit…); empty otherwise.
	Limit string
	// RetryAfter is the certain earliest wait the rejecting stage reported;
	// 0 when unknown.
	RetryAfter time.Duration
	// At is when the round ran.
	At time.Time
}

// WaitStart is a call beginning to wait because no source may run.
type WaitStart struct {
	// Scope is the call's scope.
	Scope string
	// Reason is "circuit_open" when every source was rejected by a gate
	// (cooldown or breaker), "quota_full" otherwise.
	Reason string
	// Reasons is each source's rejection reason.
	Reasons map[string]string
	// RetryAfter is the expected wait: the earliest certain moment a source
	// may be admitted; 0 when unknown (a probe in flight, a full pacer).
	RetryAfter time.Duration
	// Nap is the first sleep.
	Nap time.Duration
	// At is when the wait began.
	At time.Time
}

// WaitEnd is the end of a call's wait: a source was admitted, or the call
// gave up.
type WaitEnd struct {
	// Scope is the call's scope.
	Scope string
	// Reason is the WaitStart's.
	Reason string
	// RetryAfter is the expected wait, as at the start.
	RetryAfter time.Duration
	// Waited is how long the call actually waited.
	Waited time.Duration
	// Naps is how many sleeps the wait took.
	Naps int
	// Source is the admitted source; empty when the wait ended in an error.
	Source string
	// Err is why the wait ended without a source (stalled, cancelled, a
	// gate error; ErrClosed of package pgw when the gateway's Close ended
	// it); nil when a source was admitted.
	Err error
	// At is when the wait ended.
	At time.Time
}

// CallResult is the end of one governed call.
type CallResult struct {
	// Scope is the call's scope.
	Scope string
	// Result is one of the Result… constants.
	Result string
	// Source is the source of the call's last attempt; empty when none ran.
	Source string
	// Attempts is how many attempts the call made.
	Attempts int
	// Err is the call's error; nil on success.
	Err error
	// Start is when the call began; Duration how long it took (a chat
	// stream: until it ended).
	Start    time.Time
	Duration time.Duration
}
