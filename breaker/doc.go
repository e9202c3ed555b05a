// Package breaker is the standalone circuit breaker of seed 004: one named
// breaker guarding one dependency, with the three-state machine of package
// gate (Closed → Open → HalfOpen → Closed) underneath.
//
// A Breaker keeps no state machine of its own. It asks a gate.ProviderGate —
// an in-process memory gate by default, or any other implementation such as
// a Redis gate shared by several processes — whether a call may run, runs it,
// and records the outcome. The gate is the truth about the state; the Breaker
// adds the calling conventions, error classification, local metrics and
// state-change events.
//
// # Four ways to call
//
//	err := cb.Execute(ctx, func(ctx context.Context) error { ... })   // plain
//	v, err := breaker.Do(ctx, cb, func(ctx context.Context) (T, error) { ... })
//	call := breaker.Wrap(cb, fn)                                      // decorator (seed 004 §4.2)
//	tok, err := cb.Allow(ctx); ...; tok.Done(err)                     // two steps, manual
//
// Execute, Do and the wrapped functions record every outcome themselves,
// panics included. Allow/Done is for code that cannot put the call in a
// closure; the caller must call Done exactly once per granted token.
//
// # What counts
//
// The outcome of a call is classified in this order:
//
//   - nil, with no IsSuccessful and no DoResult verdict: a success.
//   - the caller's own context is done and the error is that context's error
//     (errors.Is(err, ctx.Err())): not counted — the caller gave up, the
//     dependency said nothing. A timeout set inside the function is a
//     failure, since the caller's ctx is still live.
//   - an error wrapped with Fatal: opens the breaker at once (a bad
//     credential, an exhausted upstream quota).
//   - an excluded error (Config.IsExcluded or Config.ExcludedErrors, seed 004
//     §4.3): not counted — a validation error says nothing about the
//     dependency.
//   - otherwise the verdict of DoResult's failed(v, err) when the call came
//     through DoResult; else of Config.IsSuccessful when set (nil error
//     included); else a nil error is a success, and an error is a failure
//     when Config.HandleErrors is empty or lists it (errors.Is), a success
//     when HandleErrors lists others. An error counted as a success is still
//     returned to the caller.
//   - a panic: a failure; the panic then continues with its original value.
//
// Calls that are not counted are recorded as gate.Released, so a HalfOpen
// probe lease they held is given back at once and the next caller may probe.
//
// # Rejections
//
// A rejected call returns an *OpenError (errors.Is(err, ErrOpen) holds) whose
// RetryAfter follows the pinned contract of package gate: the time until the
// breaker can certainly admit a call again while Open, and 0 while HalfOpen
// with its probes in flight (a probe may finish at any moment).
//
// # Registry
//
// A Registry hands out one Breaker per name (seed 004 §5.1–5.2), so code in
// different places that asks for "payments" shares one breaker. DefaultRegistry
// exists for convenience; nothing in this package uses it implicitly.
package breaker
