// Package retry holds pgw's call loops — the generic Run, and Chat
// (streaming), Embed and OCR on top of it — with the pieces they share:
// StallClock (the stall budget), Backoff (exponential, full jitter, capped)
// and Classify (how an attempt's error is treated).
//
// Every loop is the same loop; the three differ only in their attempt. Each
// round asks the scope's admission.SourceAdmission for a source (the one
// decision point), runs one attempt on it under the source's
// timeout, classifies the outcome and gives back everything the admission
// took — breaker decision, quota permit, pacer slot — on every path,
// panics included:
//
//	success                      Record(Success), settle tokens, return
//	5xx, timeout, connection …   Record(Failure), back off, fail over
//	429                          Released; pacer decrease; memo until Retry-After
//	401/402/403, spent quota     Record(Fatal): the breaker opens at once; fail over
//	400/404/413/422              Released; returned at once, no retry
//	caller's ctx done            Released; ctx.Err() returned at once
//
// A call ends with a GatewayUnavailableError (errors.As into
// *pgw.GatewayUnavailableError matches it) once MAX_ATTEMPTS attempts
// failed, and with the admission's errors when no source may run
// (CircuitOpenError, AllSourcesExhausted). All of these mark the end of
// call-level retry, which lives entirely here; re-submitting later is the
// caller's task-level retry.
//
// With Config.Observer every attempt reports its start and its record
// (outcome, HTTP status, latency, tokens, the upstream's Retry-After) and
// every call its result, on the call's goroutine and in causal order: the
// attempt's record comes before the ticket is given back, so a breaker state
// change it causes (reported by the admission) follows it. A chat stream
// reports its attempt and its call when the stream ends.
//
// Time is injected everywhere: a gate.Clock, a sleep function and a random
// source, so tests drive cooldowns, backoff and the stall budget without
// waiting. Per-attempt timeouts are context deadlines.
package retry
