package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// Breaker is one named circuit breaker. It is safe for concurrent use; a
// Breaker must not be copied.
//
// The success path of Execute takes no lock of its own and allocates nothing
// (the default memory gate takes one short per-source lock per step).
type Breaker struct {
	name       string
	gate       gate.ProviderGate
	clock      gate.Clock // nil: time.Now
	isExcluded func(error) bool
	excluded   []error
	successful func(error) bool
	handle     []error
	logger     *slog.Logger
	// trip, when set, is ReadyToTrip and FailureThreshold: it decides on
	// the counts whether a failure while Closed trips the breaker.
	trip  func(Counts) bool
	tally *tally
	// detach: the gate does I/O (it is not the in-process memory or noop
	// gate), so an outcome is recorded under a ctx the caller's end does
	// not cut (record).
	detach bool

	counters counters

	// seen is the last state observed from the gate (a gate.State); it is
	// the fast-path check of every call, so it sits apart from evMu.
	seen       atomic.Uint32
	lastChange atomic.Pointer[time.Time]

	// evMu guards the fields below. It is never held while calling the gate
	// or a listener.
	evMu      sync.Mutex
	gen       uint64 // gate generation of the last observed state
	seq       uint64 // Seq of the last queued StateChange
	queue     []StateChange
	draining  bool
	listeners []func(StateChange) // copy-on-write
}

// New returns a breaker named name. With a zero cfg it runs on a new memory
// gate with the default policy. It fails with a *ConfigError naming every
// invalid field.
func New(name string, cfg Config) (*Breaker, error) {
	if err := cfg.validate(name); err != nil {
		return nil, err
	}
	g, err := cfg.buildGate()
	if err != nil {
		return nil, &ConfigError{Name: name, Problems: []string{"Policy: " + err.Error()}, Policy: err}
	}
	b := &Breaker{
		name:       name,
		gate:       g,
		clock:      cfg.Clock,
		isExcluded: cfg.IsExcluded,
		excluded:   slices.Clone(cfg.ExcludedErrors),
		successful: cfg.IsSuccessful,
		handle:     slices.Clone(cfg.HandleErrors),
		logger:     cfg.Logger,
		listeners:  slices.Clone(cfg.OnStateChange),
	}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	b.detach = !inProcess(g)
	b.tally = newTally(cfg.Interval, cfg.CountWindow, cfg.Clock)
	b.trip = cfg.tripper()
	b.seen.Store(uint32(gate.Closed))
	return b, nil
}

// Name returns the breaker's name (its source key in the gate).
func (b *Breaker) Name() string { return b.name }

// Gate returns the gate the breaker runs on, e.g. to read its Snapshot.
func (b *Breaker) Gate() gate.ProviderGate { return b.gate }

// State returns the state the breaker's next call would meet, read from
// the gate now:
//
//   - the gate's state, an operator's hold (Open, Force) included, and
//     whatever other processes sharing the gate did;
//   - HalfOpen for an Open record whose cooldown has passed (Snapshot
//     reports an OpenUntil and a RetryAfter of 0; a hold has no OpenUntil):
//     the next call would be granted a probe. The gate
//     itself moves at that call, so no StateChange is delivered before it.
//
// A state the gate reached that this breaker had not seen yet (a force, a
// change by another process) is observed, so listeners hear of it. State
// reads the gate's Snapshot with context.Background: a short lock on the
// memory gate, one round trip on Redis. When the gate cannot be read it
// returns the state last observed (Metrics.State, which never does I/O).
func (b *Breaker) State() gate.State {
	ctx := context.Background()
	snap, err := b.gate.Snapshot(ctx, b.name)
	if err != nil {
		return gate.State(b.seen.Load())
	}
	b.observe(ctx, snap.State)
	if snap.State == gate.Open && !snap.OpenUntil.IsZero() && snap.RetryAfter == 0 {
		return gate.HalfOpen
	}
	return snap.State
}

// Execute runs fn if the breaker admits a call, and records its outcome
// (see the package documentation for what counts). It returns fn's error
// unchanged, an *OpenError when the breaker rejects the call without running
// fn, or the gate's error, wrapped, when the gate cannot be asked. A ctx
// already done when Execute is called (or that ends while the gate answers)
// is not admitted: fn does not run, the call counts in Metrics.Cancelled,
// and the error wraps ctx's error (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded); it is not an *OpenError. On a gate that does
// I/O (Redis), the outcome of a call that ran is written under a ctx the
// caller's cancellation or deadline does not cut, so that a probe's lease is
// never left taken by a caller who gave up while its outcome was being
// written: Execute then returns after that round trip, bounded by the
// client's own timeouts.
//
// A panic in fn is recorded as a failure and then continues with its original
// value. A panic in a classifier of the Config (IsSuccessful, IsExcluded) or
// of DoResult records no verdict: the admission is given back, the call
// counts in Metrics.Cancelled, and the panic continues. Execute is safe for
// concurrent use; on the success path it allocates nothing.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if fn == nil {
		panic("pgw/breaker: Execute called with a nil function")
	}
	return b.execute(ctx, fn, nil)
}

// execute is Execute with an optional verdict: when failed is set, it
// decides success or failure in place of IsSuccessful, HandleErrors and the
// default (caller cancellation, Fatal and exclusions still come first).
func (b *Breaker) execute(ctx context.Context, fn func(context.Context) error, failed func(error) bool) error {
	d, err := b.enter(ctx)
	if err != nil {
		return err
	}
	e := b.tally.admit(d)
	// The outcome is recorded whatever happens from here on: a listener
	// that panics while the admission is observed (the call never ran, its
	// lease is given back), fn panicking (a failure), a classifier of the
	// caller's panicking (no verdict: the lease is given back), or fn
	// returning.
	stage := stageAdmitted
	defer func() {
		switch stage {
		case stageAdmitted, stageClassifying:
			b.record(ctx, d, e, resCancelled) // the panic continues by itself
		case stageRunning:
			b.abandon(ctx, d, e, recover())
		}
	}()
	b.observe(ctx, d.State)
	stage = stageRunning
	err = fn(ctx)
	stage = stageClassifying
	r := b.classify(ctx, err, failed)
	stage = stageFinished
	b.record(ctx, d, e, r)
	return err
}

// The stages of an admitted call in Execute, for its deferred recording.
const (
	stageAdmitted = iota
	stageRunning
	stageClassifying
	stageFinished
)

// DoResult is Do with a verdict over the value as well as the error:
// failed(v, err) reports whether the call failed, in place of
// Config.IsSuccessful, Config.HandleErrors and the default. A caller's
// cancellation, a Fatal error and an excluded error are classified first,
// as for Execute. DoResult returns fn's value and error unchanged whatever
// the verdict. It is failsafe-go's HandleResult and HandleIf:
//
//	resp, err := breaker.DoResult(ctx, cb, send, func(r *http.Response, err error) bool {
//		return err != nil || r.StatusCode >= 500
//	})
//
// failed must not be nil. Each call allocates.
func DoResult[T any](ctx context.Context, cb *Breaker, fn func(context.Context) (T, error), failed func(T, error) bool) (T, error) {
	if fn == nil || failed == nil {
		panic("pgw/breaker: DoResult called with a nil function or verdict")
	}
	var v T
	err := cb.execute(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	}, func(err error) bool { return failed(v, err) })
	return v, err
}

// Do runs fn through cb.Execute and returns its value: the generic form of
// Execute. On a rejection or gate error it returns the zero T.
func Do[T any](ctx context.Context, cb *Breaker, fn func(context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("pgw/breaker: Do called with a nil function")
	}
	var v T
	err := cb.Execute(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// Allow is the first half of manual use: it asks the breaker for one call
// and, when admitted, returns a Token whose Done must be called exactly once
// with the call's error. On a rejection it returns a nil Token and an
// *OpenError; with a ctx already done, a nil Token and an error wrapping
// ctx's error, as Execute does. Prefer Execute where the call fits in a closure: Allow cannot
// see panics, and a Token never finished holds a probe lease until the gate
// expires it (Policy.ProbeTTL).
//
//	tok, err := cb.Allow(ctx)
//	if err != nil {
//		return err
//	}
//	resp, err := client.Send(ctx, req)
//	tok.Done(err)
//
// Allow is safe for concurrent use; each Token allocates.
func (b *Breaker) Allow(ctx context.Context) (*Token, error) {
	d, err := b.enter(ctx)
	if err != nil {
		return nil, err
	}
	e := b.tally.admit(d)
	observed := false
	defer func() {
		if !observed {
			// A listener panicked: no Token reaches the caller, so the
			// admission is given back here.
			b.record(ctx, d, e, resCancelled)
		}
	}()
	b.observe(ctx, d.State)
	observed = true
	return &Token{b: b, ctx: ctx, d: d, phase: e}, nil
}

// notRun counts a call not run because its caller's ctx is done and
// returns the error that says so, wrapping err (the ctx's error).
func (b *Breaker) notRun(err error) error {
	b.counters.cancelled.Add(1)
	return fmt.Errorf("pgw/breaker: breaker %q: not run, the caller's context is done: %w", b.name, err)
}

// Token is one call admitted by Allow. Its Done is safe for concurrent use.
type Token struct {
	b     *Breaker
	ctx   context.Context
	d     gate.Decision
	phase *phase
	done  atomic.Bool
}

// Done records the outcome of the call, classified as for Execute against
// the context given to Allow. Only the first Done counts; later calls, and
// Done on a nil Token, do nothing.
func (t *Token) Done(err error) {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	classified := false
	defer func() {
		if !classified {
			// A classifier of the caller's panicked: no verdict, so the
			// admission is given back; the panic continues by itself.
			t.b.record(t.ctx, t.d, t.phase, resCancelled)
		}
	}()
	r := t.b.classify(t.ctx, err, nil)
	classified = true
	t.b.record(t.ctx, t.d, t.phase, r)
}

// Probe reports whether the token holds a HalfOpen probe lease: its outcome
// decides whether the breaker closes.
func (t *Token) Probe() bool { return t != nil && t.d.Probe }

// enter asks the gate for a call and turns a rejection into an *OpenError.
// An admission is not observed here: the caller first arranges for its
// outcome to be recorded, then observes it (a listener may panic).
//
// A ctx already done is not admitted: the call is counted cancelled and
// the gate is not asked (it would refuse it anyway, taking nothing). A ctx
// that ends while the gate answers, which makes the gate fail with the
// ctx's error, is the same cancelled call, not a gate error.
func (b *Breaker) enter(ctx context.Context) (gate.Decision, error) {
	if err := ctx.Err(); err != nil {
		return gate.Decision{}, b.notRun(err)
	}
	d, err := b.gate.TryEnter(ctx, b.name)
	if err != nil {
		if cerr := callerEnded(ctx, err); cerr != nil {
			return gate.Decision{}, b.notRun(cerr)
		}
		b.counters.gateErrors.Add(1)
		return d, fmt.Errorf("pgw/breaker: breaker %q: gate TryEnter: %w", b.name, err)
	}
	if !d.Allowed {
		b.counters.rejections.Add(1)
		b.tally.seen(d.Generation, d.State)
		b.observe(ctx, d.State)
		return d, &OpenError{Name: b.name, State: d.State, RetryAfter: d.RetryAfter}
	}
	return d, nil
}

// result is how a finished call is counted locally.
type result uint8

const (
	resSuccess result = iota
	resFailure
	resFatal
	resExcluded
	resCancelled
)

// outcome is the gate outcome recorded for r.
func (r result) outcome() gate.Outcome {
	switch r {
	case resSuccess:
		return gate.Success
	case resFailure:
		return gate.Failure
	case resFatal:
		return gate.Fatal
	}
	return gate.Released
}

// classify applies the order of the package documentation. failed, when
// set, is DoResult's verdict.
func (b *Breaker) classify(ctx context.Context, err error, failed func(error) bool) result {
	if err == nil && failed == nil && b.successful == nil {
		return resSuccess
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return resCancelled
		}
		if _, ok := errors.AsType[*FatalError](err); ok {
			return resFatal
		}
		if b.isExcluded != nil && b.isExcluded(err) {
			return resExcluded
		}
		for _, e := range b.excluded {
			if errors.Is(err, e) {
				return resExcluded
			}
		}
	}
	switch {
	case failed != nil:
		if failed(err) {
			return resFailure
		}
		return resSuccess
	case b.successful != nil:
		if b.successful(err) {
			return resSuccess
		}
		return resFailure
	case err == nil:
		return resSuccess
	case len(b.handle) > 0:
		for _, e := range b.handle {
			if errors.Is(err, e) {
				return resFailure
			}
		}
		return resSuccess
	}
	return resFailure
}

// abandon records a call that did not return: a panic (p != nil) is a
// failure and is re-raised; runtime.Goexit (p == nil, e.g. t.FailNow in a
// test) gives the lease back like a cancellation. The panic is re-raised
// from a deferred call, so it continues with its original value even when
// recording it makes a state-change listener panic.
func (b *Breaker) abandon(ctx context.Context, d gate.Decision, e *phase, p any) {
	if p == nil {
		b.record(ctx, d, e, resCancelled)
		return
	}
	defer panic(p)
	b.record(ctx, d, e, resFailure)
}

// record reports r to the gate, counts it locally as the gate took it, and
// observes the state the gate answers with. A success or failure the gate
// ignored as stale is counted as Stale only, so the local counts never run
// ahead of the gate's. e is the phase of the counts the call was admitted in.
func (b *Breaker) record(ctx context.Context, d gate.Decision, e *phase, r result) {
	if ctx.Err() != nil || (b.detach && ctx.Done() != nil) {
		// The outcome must reach the gate even though the caller gave up,
		// or a probe lease would stay taken until it expires; and on a
		// gate that does I/O, also when the caller's deadline passes or
		// its cancellation comes while the gate answers. Re-sending a
		// Record that failed instead could count the call twice.
		ctx = context.WithoutCancel(ctx)
	}
	o := r.outcome()
	early := false // the failure is already in the counts
	if o == gate.Failure && b.trip != nil && d.State == gate.Closed && !d.Probe {
		// The trip predicate sees the counts with this failure in them,
		// counted before the gate's answer so that failures ending
		// together see each other. (Should the gate call it stale, its
		// answer shows a newer generation and the counts start again.) A
		// trip is recorded as Fatal: the gate then opens at once with its
		// current cooldown. A Fatal is applied whatever generation it
		// comes from, so the trip is sent only while the gate's record is
		// still the Closed generation the call was admitted in: a call
		// that outlived a trip and a close (by another process sharing the
		// gate, or a force on the gate itself) must not open the new one.
		var c Counts
		if c, early = b.tally.failNow(e); early {
			trip, p := b.askTrip(c)
			if p != nil {
				// The predicate panicked: the failure is recorded as
				// it is, then the panic continues.
				defer panic(p)
			} else if trip && b.stillAdmitted(ctx, d) {
				o = gate.Fatal
			}
		}
	}
	u, err := b.gate.Record(ctx, b.name, d, o)
	if err != nil {
		// The gate could not say; the call is counted as it ended.
		b.counters.count(r)
		if !early {
			b.tally.count(e, r)
		}
		b.logger.LogAttrs(ctx, slog.LevelWarn, "pgw/breaker: gate Record failed",
			slog.String("breaker", b.name), slog.String("outcome", o.String()), slog.Any("err", err))
		return
	}
	counted := u.Applied || o == gate.Released
	if counted {
		b.counters.count(r)
	} else {
		b.counters.stale.Add(1)
	}
	b.tally.settle(e, r, counted && !early, u.Generation, u.State)
	b.observe(ctx, u.State)
}

// askTrip asks the trip predicate about c, recovering a panic of it
// (p non-nil) so that the failure can still be recorded.
func (b *Breaker) askTrip(c Counts) (trip bool, p any) {
	defer func() { p = recover() }()
	return b.trip(c), nil
}

// stillAdmitted reports whether the gate's record is still the Closed
// generation d was admitted in. It reads the gate's Snapshot, so it is
// asked only when a trip predicate says trip; when the gate cannot be read
// it answers true, and the trip is sent.
func (b *Breaker) stillAdmitted(ctx context.Context, d gate.Decision) bool {
	snap, err := b.gate.Snapshot(ctx, b.name)
	if err != nil {
		return true
	}
	return snap.State == gate.Closed && snap.Generation == d.Generation
}

// callerDeadlineSlack is how close to ctx's deadline a gate error that is
// context.DeadlineExceeded counts as that deadline.
const callerDeadlineSlack = 5 * time.Millisecond

// callerEnded returns ctx's error when err, a gate's error, came from the
// caller's ctx ending rather than from the gate: ctx.Err() when ctx is done
// and err is its error, or context.DeadlineExceeded when err is that
// deadline reported a moment before ctx says so (a Redis client sets its
// socket's deadline from ctx's, and the socket's timer may fire first).
// nil: the gate failed.
func callerEnded(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return cerr
		}
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, context.DeadlineExceeded) && time.Until(dl) < callerDeadlineSlack {
		return context.DeadlineExceeded
	}
	return nil
}

// inProcess reports whether g is a gate that lives in the process and
// never blocks (the memory gate, the noop gate): the caller's ctx cannot
// cut its answer short.
func inProcess(g gate.ProviderGate) bool {
	switch g.(type) {
	case *memory.Breaker, gate.Noop, *gate.Noop:
		return true
	}
	return false
}

// now is the time of a state change.
func (b *Breaker) now() time.Time {
	if b.clock != nil {
		return b.clock.Now()
	}
	return time.Now()
}
