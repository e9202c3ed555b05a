// Package breaker is a standalone circuit breaker: one named
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
//	call := breaker.Wrap(cb, fn)                                      // decorator
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
//   - an excluded error (Config.IsExcluded or Config.ExcludedErrors):
//     not counted — a validation error says nothing about the
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
// A call whose ctx is already done is not admitted either, whatever the
// state: the function does not run, the gate is not asked (no probe lease is
// taken), the call counts in Metrics.Cancelled, and the error wraps the
// ctx's error — it is not an *OpenError, and nothing is counted against the
// dependency.
//
// # State, counts and holds
//
// State reads the gate: an operator's hold, another process's change, and
// HalfOpen once an Open phase's cooldown has passed (the next call would
// probe; the gate moves, and listeners hear of it, at that call). Counts
// are gobreaker-style per-generation counts that start again at every state
// change, every Config.Interval while Closed, and on ResetCounts; Metrics
// are totals since creation. Open holds the breaker open, Close resets it
// to a fresh Closed record, HalfOpen starts a probe phase at once (Force
// takes a context and any gate.Force).
//
// # Where each rule runs
//
// A rule that decides a transition of a shared state lives in the gate, so
// the memory and Redis gates behave alike and the contract suite pins it.
// A rule that needs a Go function, or only this process's view, lives in
// the Breaker:
//
//	gate (gate.Policy, every process sharing the gate):
//	  ConsecutiveFailures (gate.Disabled: off), Window + WindowMinCalls +
//	  WindowFailureRate / WindowFailures, Cooldown, CooldownMultiplier,
//	  MaxCooldown, ProbeTTL, SuccessThreshold, HalfOpenProbes,
//	  HalfOpenCalls, gate.Force (Open, Close, HalfOpen)
//	breaker (Config, this process):
//	  IsSuccessful, HandleErrors, DoResult's verdict, IsExcluded,
//	  ExcludedErrors, ReadyToTrip, FailureThreshold, CountWindow, Interval,
//	  Counts, listeners
//
// ReadyToTrip and FailureThreshold run on this Breaker's Counts. When one
// of them says trip, the failure is recorded as gate.Fatal, which opens the
// gate at once with its current cooldown, so every process sharing it sees
// the trip; each process decides on its own counts.
//
// # Coming from gobreaker / failsafe-go
//
// Settings of sony/gobreaker v2 and their pgw equivalents:
//
//	Name                       breaker.New(name, ...) (a name is required: it is the gate key)
//	MaxRequests n              Policy{SuccessThreshold: n, HalfOpenProbes: n, HalfOpenCalls: n}
//	Interval                   Config.Interval (starts the Counts again; the gate is unaffected)
//	Interval with BucketPeriod Policy.Window = Interval (the span of gobreaker's rolling
//	(rolling window)           window; the gate's buckets are Window/10), with WindowMinCalls
//	                           and WindowFailureRate or WindowFailures; read it in
//	                           Gate().Snapshot
//	Timeout                    Policy.Cooldown, with CooldownMultiplier: 1
//	ReadyToTrip(Counts)        Config.ReadyToTrip(Counts)
//	default ReadyToTrip        Policy.ConsecutiveFailures: 6 (more than 5 in a row)
//	OnStateChange              Config.OnStateChange / Breaker.OnStateChange (StateChange)
//	IsSuccessful, IsExcluded   Config.IsSuccessful, Config.IsExcluded (and ExcludedErrors)
//	Execute, Counts, State     Execute / Do, Counts, State
//	TwoStepCircuitBreaker      Allow → Token.Done
//	ErrOpenState,              ErrOpen (errors.Is); the *OpenError's State is Open, or
//	ErrTooManyRequests         HalfOpen when the phase has no probe left to grant
//	distributed breaker        Config.Gate: a Redis gate (gate/redis), one script per step
//
// Settings of failsafe-go's circuit breaker and their pgw equivalents:
//
//	WithFailureThreshold(n)            Config{FailureThreshold: n, CountWindow: n}, and
//	                                   Policy.ConsecutiveFailures: gate.Disabled
//	WithFailureThresholdRatio(f, c)    Config{FailureThreshold: f, CountWindow: c}, idem
//	WithFailureThresholdPeriod(f, p)   Policy{Window: p, WindowFailures: f, WindowMinCalls: f}
//	WithFailureRateThreshold(r, n, p)  Policy{Window: p, WindowFailureRate: r, WindowMinCalls: n}
//	WithSuccessThreshold(n)            Policy{SuccessThreshold: n, HalfOpenCalls: n, HalfOpenProbes: n}
//	WithSuccessThresholdRatio(s, c)    Policy{SuccessThreshold: s, HalfOpenCalls: c, HalfOpenProbes: c}
//	half-open without a success        failure threshold f of capacity c: SuccessThreshold c−f+1,
//	threshold                          HalfOpenCalls c, HalfOpenProbes c
//	WithDelay(d)                       Policy.Cooldown d, CooldownMultiplier: 1
//	HandleErrors(errs...)              Config.HandleErrors
//	HandleResult, HandleIf             DoResult(ctx, cb, fn, failed)
//	OnOpen, OnClose, OnHalfOpen        Breaker.OnOpen, OnClose, OnHalfOpen
//	event Metrics(), Context()         StateChange.Counts, StateChange.Context
//	Open(), Close(), HalfOpen()        Breaker.Open, Close, HalfOpen (Open holds; see below)
//	IsOpen, IsClosed, IsHalfOpen       State() == gate.Open, ...
//	ErrOpen                            ErrOpen (errors.Is), an *OpenError with RetryAfter
//	Metrics(): Executions, Failures,   Counts(): Executions, TotalFailures, TotalSuccesses,
//	Successes, FailureRate, SuccessRate  FailureRate, SuccessRate
//	RemainingDelay                     Gate().Snapshot(...).RetryAfter, OpenError.RetryAfter
//	TryAcquirePermit, RecordSuccess,   Allow, then Token.Done(nil) or Token.Done(err)
//	RecordFailure, RecordError
//	WithClock                          Config.Clock (or memory.WithClock on your own gate)
//
// Deliberate differences, and why:
//
//   - The gate is the truth, and a read does not move it: State reports
//     HalfOpen once the cooldown has passed, but the move (and its
//     StateChange) happens at the next call, which takes the probe lease.
//     Both peers move inside State. A shared gate cannot grant a lease to a
//     read.
//   - Counts start again at every state change, as gobreaker's do; while
//     Open they are empty. failsafe-go keeps showing the Closed phase's
//     metrics while Open: pgw hands them to listeners as StateChange.Counts,
//     and Metrics keeps the totals.
//   - A HalfOpen phase is decided as soon as its outcome is certain: it
//     re-opens once SuccessThreshold can no longer be reached within
//     HalfOpenCalls. failsafe-go's rate rule in HalfOpen waits for its
//     minimum executions first. Deciding early frees callers sooner and is
//     the same verdict.
//   - The shortest Cooldown is 1ms; there is no WithDelay(0). An Open phase
//     always ends after it starts, which keeps the RetryAfter contract
//     exact.
//   - Open holds the breaker open until Close or HalfOpen (the gate's
//     ForceOpen, RetryAfter 0); failsafe-go's Open lasts one delay. Trips
//     with a cooldown come from failures, ReadyToTrip or Fatal.
//   - Invalid settings (a negative duration, an empty name) fail New with a
//     *ConfigError naming them; gobreaker silently replaces them by
//     defaults.
//   - The rolling window is the gate's (Policy.Window), shared by every
//     process; Counts do not roll (gobreaker's BucketPeriod rolls them).
//   - Defaults: 5 consecutive failures trip (gobreaker: more than 5;
//     failsafe-go: 1), and each re-open after a failed probe doubles the
//     cooldown up to MaxCooldown (both peers keep it constant:
//     CooldownMultiplier 1).
//   - A call ended by its caller's cancellation is not counted; a HalfOpen
//     rejection carries RetryAfter 0 (a probe may finish at any moment).
//   - A call whose ctx is already done does not run (gobreaker's Execute
//     takes no context and would run it): Execute returns an error wrapping
//     the ctx's error.
//   - States are gate.State: Closed 0, Open 1, HalfOpen 2, "half_open"
//     (gobreaker: HalfOpen 1, Open 2, "half-open").
//
// # Registry
//
// A Registry hands out one Breaker per name, so code in
// different places that asks for "payments" shares one breaker. DefaultRegistry
// exists for convenience; nothing in this package uses it implicitly.
package breaker
