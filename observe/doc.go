// Package observe is how pgw reports what it does: one event per
// attempt, breaker state change, gate rejection, wait and call, handed to an
// Observer. It is a low package — admission and retry call it, the root
// package re-exports it — and depends on nothing outside the module, so the
// Prometheus collector lives in its own sub-package (observe/prom).
//
// # Interfaces
//
// Observer is the small core every observer implements: attempt records and
// state changes. The other events go to the optional interfaces
// AttemptStartObserver, RejectionObserver, WaitObserver, CallObserver,
// HedgeObserver and AdvertisedObserver, called only when the observer
// implements them (as net/http checks for http.Flusher). Nop, Funcs, Multi,
// Async and the Prometheus collector implement the first four (Full) and
// HedgeObserver; Multi and Async pass every one of them on, each to the
// observers that implement it.
//
// EnabledObserver lets an observer say it is off for now: a call that finds
// it off when it starts hands it none of its events. Inside Multi each
// member answers for itself; Async asks the observer it wraps.
//
// ContextObserver is for tracers: it sees each call's and each attempt's
// ctx at their start and hands back the ctx they run under (carrying a
// span), and gets that ctx back at their end. The attempt's ctx reaches the
// transport, which adds the headers of the ctx's AttemptHooks (the trace
// context) to its request. The OpenTelemetry observer (observe/otel, a
// module of its own) is one.
//
// # Delivery
//
// pgw calls an observer outside every lock of its own, on the goroutine of
// the call the event belongs to, synchronously. The events of one call
// therefore arrive in the order they happened: an attempt's start, its
// record, then the state change its outcome caused, then the call's result.
// Events of different calls may interleave; the state changes of one source
// are reported one after the other (each From is the previous To).
//
// A synchronous observer that blocks slows the calls that report to it.
// Async(o, n) puts a bounded queue and one goroutine in front of o: a call
// never waits on it, a full queue drops the event and counts it (Dropped),
// and Close drains the queue and stops the goroutine. Wrap any observer that
// does more than update counters in Async. One goroutine delivers, so the
// order of one call's events survives the queue. What a full queue drops
// never leaves a gauge wrong: the end of an attempt or wait whose start went
// in is kept aside rather than dropped, so is each source's latest state
// change, and an attempt or wait whose start was dropped loses its end too.
//
// # What each event means
//
//   - AttemptStart: an admitted attempt begins on a source (in-flight +1).
//   - AttemptRecord: it ended (in-flight −1), with its outcome, HTTP status,
//     latency, tokens and the upstream's Retry-After. A chat stream ends when
//     its answer does, so its record comes when the stream ends.
//   - Rejection: an admission round skipped a source, and why: the cooldown
//     memo, the breaker, the quota, the pacer.
//   - StateChange: this process saw a source's breaker in another state (or
//     another operator override) than it last saw, in a gate answer. With a
//     shared (Redis) gate the change may have been made by another process or
//     an operator. It carries what the gate answered — new state, override,
//     generation, RetryAfter — and this process's outcome counts since the
//     change before: the counts that caused it, which the gate itself
//     clears at the transition. Seeing it costs no gate operation beyond the
//     answers the calls needed anyway.
//   - WaitStart, WaitEnd: a call found no runnable source and waits:
//     why, per source, how long it expects to wait and how long it
//     did.
//   - CallResult: a governed call ended: success, or why not.
//   - Hedge: a hedge of a call fired, won, was wasted or cancelled, or
//     was due and skipped.
//   - Advertised: an upstream answer's rate-limit figures.
package observe
