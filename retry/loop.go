package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/byname"
	"github.com/pgw-go/pgw/internal/callctx"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// Config builds a scope's Loop. Scope and Breaker are required; every other
// zero field means its default.
type Config struct {
	// Scope is the scope's settings: sources, QUOTA_FULL, CIRCUIT_OPEN,
	// MAX_ATTEMPTS, STALL_WINDOW_S, POLL_INTERVAL_S (zero fields: defaults).
	Scope config.ScopeSettings
	// Breaker is the scope's breaker gate.
	Breaker gate.ProviderGate
	// Quota is the scope's quota gate; nil means unlimited.
	Quota gate.QuotaGate
	// Memo is the cooldown memo; nil means a new one.
	Memo *admission.Memo
	// Pacer is the AIMD pacer (chat); nil means none.
	Pacer admission.Pacing
	// Demote is kept for compatibility and ignored: every loop (Run,
	// Chat, Embed, OCR) moves a source that failed in a call after the
	// healthy ones for the rest of that call, so a failing primary is not
	// retried while a healthy backup waits.
	//
	// Deprecated: demotion is always on.
	Demote bool
	// Backoff is the backoff between failed attempts (zero: defaults).
	Backoff Backoff
	// Classify replaces the default classification (Classify).
	Classify func(error) Class
	// Clock tells the time (default the wall clock).
	Clock gate.Clock
	// Sleep waits for d or until ctx is done, returning ctx.Err() then
	// (default admission.SleepContext).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1), safe for concurrent use (default
	// math/rand/v2.Float64).
	Rand func() float64
	// Logger receives wait lines, breaker state changes and give-back
	// failures (default slog.Default()).
	Logger *slog.Logger
	// HedgeTimer arms the hedge delays of a scope that hedges (default
	// time.NewTimer). Tests fire it by hand.
	HedgeTimer HedgeTimer
	// Observer receives every attempt (start and record), call result,
	// breaker state change, gate rejection and wait of the scope (package
	// observe); nil means none. It is called synchronously on the calls'
	// goroutines, outside every lock: wrap anything slower than a counter
	// in observe.Async.
	Observer observe.Observer
	// Advertising reads the upstreams' rate-limit headers of every attempt
	// into the admission's advertised budget; the zero value reads none.
	Advertising admission.Advertising
	// Writer gives back the attempts' outcomes off the callers' goroutines
	// (admission.Writer); nil means on them, for in-process gates.
	Writer *admission.Writer
}

// Loop runs governed calls for one scope. Build one per scope with New and
// share it between the scope's calls: it is safe for concurrent use when its
// gates, pacer, sleep and rand are (the defaults are).
type Loop struct {
	scope          string
	sources        map[string]config.Source
	order          []string                  // source names in settings order
	byName         byname.Index[*loopSource] // sources, for the hot path
	adm            *admission.SourceAdmission
	maxAttempts    int
	window         time.Duration
	demote         bool
	backoff        Backoff
	classify       func(error) Class
	clock          gate.Clock
	sleep          func(context.Context, time.Duration) error
	rand           func() float64
	log            *slog.Logger
	deliveries     Deliveries
	minBatch       int
	partSlots      int          // MAX_IN_FLIGHT summed over the sources when every source has one; 0: unbounded
	obs            observe.Full // nil: no observer
	tr             observe.ContextObserver
	hedge          *hedging       // nil: the scope does not hedge
	wall           bool           // clock is the system's: nowAfter may read the monotonic clock alone
	inlineGiveBack bool           // no Writer: a ticket's Done gives back before it returns
	legs           sync.WaitGroup // hedged attempts running on goroutines of their own
}

// New builds the loop of cfg.Scope.
func New(cfg Config) (*Loop, error) {
	sc := cfg.Scope.WithDefaults()
	var bad []string
	if sc.MaxAttempts < 1 {
		bad = append(bad, fmt.Sprintf("Scope.MaxAttempts=%d (legal: ≥ 1, or 0 for 3 × sources)", sc.MaxAttempts))
	}
	if sc.StallWindow < 0 {
		bad = append(bad, fmt.Sprintf("Scope.StallWindow=%v (legal: > 0, or 0 for %v)", sc.StallWindow, config.DefaultStallWindow))
	}
	l := &Loop{
		scope:          sc.Name,
		sources:        make(map[string]config.Source, len(sc.Sources)),
		maxAttempts:    sc.MaxAttempts,
		window:         sc.StallWindow,
		demote:         true,
		backoff:        cfg.Backoff,
		classify:       cfg.Classify,
		clock:          cfg.Clock,
		sleep:          cfg.Sleep,
		rand:           cfg.Rand,
		log:            cfg.Logger,
		obs:            observe.AsFull(cfg.Observer),
		tr:             observe.AsContext(cfg.Observer),
		hedge:          newHedging(sc, cfg.HedgeTimer),
		inlineGiveBack: cfg.Writer == nil,
	}
	if l.classify == nil {
		l.classify = Classify
	}
	if l.clock == nil {
		l.clock = gate.SystemClock{}
	}
	_, l.wall = l.clock.(gate.SystemClock)
	if l.sleep == nil {
		l.sleep = admission.SleepContext
	}
	if l.rand == nil {
		l.rand = rand.Float64
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	srcs := make([]admission.Source, len(sc.Sources))
	bounded := len(sc.Sources) > 0
	for i, s := range sc.Sources {
		if s.MaxInFlight <= 0 {
			bounded = false
		}
		l.partSlots += s.MaxInFlight
		l.sources[s.Name] = s
		l.order = append(l.order, s.Name)
		srcs[i] = admission.Source{Name: s.Name, Weight: s.Weight, Priority: s.Priority}
		if s.BatchSize > 0 && (l.minBatch == 0 || s.BatchSize < l.minBatch) {
			l.minBatch = s.BatchSize
		}
	}
	if !bounded {
		l.partSlots = 0
	}
	byName := make(map[string]*loopSource, len(l.sources))
	for name, s := range l.sources {
		ls := &loopSource{Source: s}
		if s.Timeout > 0 {
			ls.timeouts = callctx.NewTimeouts(s.Timeout)
		}
		byName[name] = ls
	}
	l.byName = byname.Of(byName)
	adm, err := admission.New(admission.Config{
		Scope:        sc.Name,
		Sources:      srcs,
		Breaker:      cfg.Breaker,
		Quota:        cfg.Quota,
		Memo:         cfg.Memo,
		Pacer:        cfg.Pacer,
		QuotaFull:    admission.Mode(sc.QuotaFull),
		CircuitOpen:  admission.Mode(sc.CircuitOpen),
		PollInterval: sc.PollInterval,
		Clock:        l.clock,
		Sleep:        l.sleep,
		Rand:         l.rand,
		Logger:       l.log,
		Observer:     cfg.Observer,
		Balance:      admission.Balance(sc.Balance),
		Advertising:  cfg.Advertising,
		Writer:       cfg.Writer,
	})
	var ce *admission.ConfigError
	if errors.As(err, &ce) {
		bad = append(bad, ce.Problems...)
	} else if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, &ConfigError{Scope: sc.Name, Problems: bad}
	}
	l.adm = adm
	return l, nil
}

// loopSource is a source's settings with the timer of its attempts'
// deadlines, shared by them all.
type loopSource struct {
	config.Source
	timeouts *callctx.Timeouts // nil: the source sets no timeout
}

// source returns the settings of the source named name.
func (l *Loop) source(name string) config.Source {
	return l.lookup(name).Source
}

// noSource is what lookup finds for a name that is none of the loop's.
var noSource loopSource

// lookup returns the source named name, one of the loop's.
func (l *Loop) lookup(name string) *loopSource {
	s, ok := l.byName.Get(name)
	if !ok {
		return &noSource
	}
	return s
}

// ConfigError lists every invalid field of a loop's Config.
type ConfigError struct {
	// Scope names the scope whose Config is invalid.
	Scope string
	// Problems has one entry per invalid field: its name, its value and
	// what is legal.
	Problems []string
}

// Error implements the error interface.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("pgw/retry: scope %q: invalid config: %s", e.Scope, strings.Join(e.Problems, "; "))
}

// Scope returns the scope's name.
func (l *Loop) Scope() string { return l.scope }

// Admission returns the scope's admission.
func (l *Loop) Admission() *admission.SourceAdmission { return l.adm }

// Deliveries returns the scope's last-success record.
func (l *Loop) Deliveries() *Deliveries { return &l.deliveries }

// AttemptFunc is one attempt on one source: it returns the value, the tokens
// used (for the quota's settle; zero when unknown) and an error that
// Classify understands (a *transport.HTTPError for an upstream HTTP failure). ctx
// carries the source's timeout.
type AttemptFunc[T any] func(ctx context.Context, src config.Source) (T, transport.Usage, error)

// Run runs fn as one governed call of l's scope (pgw.Call): admission, one
// attempt per round under the source's timeout, classification, backoff and
// fail-over, until a success, an error that ends the call, or MAX_ATTEMPTS.
// estTokens is reserved with the quota and settled to the attempt's usage. A
// panic in fn gives back everything the attempt held and is re-raised.
func Run[T any](ctx context.Context, l *Loop, estTokens int64, fn AttemptFunc[T]) (T, error) {
	return runWith(ctx, l, "", "", estTokens, l.demote, plainAttempt[T](fn), nil, nil)
}

// RunIn is Run with room for the call's first attempt in first, which the
// caller allocated with what holds the call, sparing the attempt an
// allocation of its own. first serves one call, once: it is never reused,
// since a goroutine the attempt started may keep its ctx.
func RunIn[T any](ctx context.Context, l *Loop, estTokens int64, fn AttemptFunc[T], first *First) (T, error) {
	return runWith(ctx, l, "", "", estTokens, l.demote, plainAttempt[T](fn), nil, first)
}

// First is room for a call's first attempt (RunIn). The zero First is
// ready.
type First struct {
	s    attemptState
	used bool
}

// hold is what an attempt holds: its ticket and its ctx's cancel. An attempt
// whose result outlives it (a chat stream) takes them over with keep; the
// loop then neither gives the ticket back nor cancels the ctx.
type hold struct {
	ticket *admission.Ticket
	cancel context.CancelFunc // nil: actx.Stop
	actx   *callctx.Ctx
	rep    *attemptReport // nil without an observer
	start  time.Time      // when the attempt began
	kept   bool
	first  bool // its first chunk was noted
}

func (h *hold) keep() (*admission.Ticket, context.CancelFunc) {
	h.kept = true
	if h.cancel == nil {
		h.cancel = h.actx.Stop
	}
	return h.ticket, h.cancel
}

type attemptFunc[T any] func(ctx context.Context, src config.Source, h *hold) (T, transport.Usage, error)

// attempter is what the loop runs as an attempt. A func type is one
// without allocating: a func value fits the interface as it is, where a
// closure adapting Run's AttemptFunc would be allocated per call. src is
// the loop's own settings of the source, read only: the attempt's function
// gets its copy, the one copy an attempt makes.
type attempter[T any] interface {
	attempt(ctx context.Context, src *config.Source, h *hold) (T, transport.Usage, error)
}

func (f attemptFunc[T]) attempt(ctx context.Context, src *config.Source, h *hold) (T, transport.Usage, error) {
	return f(ctx, *src, h)
}

// plainAttempt is Run's AttemptFunc, which takes no hold.
type plainAttempt[T any] AttemptFunc[T]

func (f plainAttempt[T]) attempt(ctx context.Context, src *config.Source, _ *hold) (T, transport.Usage, error) {
	return f(ctx, *src)
}

// run is the one loop behind Run, Chat, Embed and OCR, with the call's
// result reported to the observer (by the stream instead, when a chat stream
// took the call over).
func run[T any](ctx context.Context, l *Loop, estTokens int64, demote bool, attempt attemptFunc[T]) (T, error) {
	return runOp(ctx, l, "", "", estTokens, demote, attempt)
}

// runOp is run for a call of operation op (observe.Operation…) asking for
// model (empty: each source's), as the observer is told.
func runOp[T any](ctx context.Context, l *Loop, op, model string, estTokens int64, demote bool, attempt attemptFunc[T]) (T, error) {
	return runWith(ctx, l, op, model, estTokens, demote, attempt, nil, nil)
}

// runPart is runOp for one part of a split call whose parts are sib.
func runPart[T any](ctx context.Context, l *Loop, sib *admission.Siblings, op, model string, estTokens int64, demote bool, attempt attemptFunc[T]) (T, error) {
	return runWith(ctx, l, op, model, estTokens, demote, attempt, sib, nil)
}

// runWith is runOp for any attempter; sib, when not nil, are the parts of
// the split call this call is one of.
func runWith[T any](ctx context.Context, l *Loop, op, model string, estTokens int64, demote bool, attempt attempter[T], sib *admission.Siblings, first *First) (T, error) {
	rep := l.newReport()
	if rep == nil {
		return rounds(ctx, l, estTokens, demote, attempt, nil, sib, first)
	}
	ctx = rep.begin(ctx, op, model)
	returned := false
	defer func() {
		if !returned { // an attempt panicked; the panic goes on
			rep.end(observe.ResultError, errPanicked)
		}
	}()
	v, err := rounds(ctx, l, estTokens, demote, attempt, rep, sib, first)
	returned = true
	if !rep.handed {
		rep.end(callResult(ctx, l, err), err)
	}
	return v, err
}

// rounds runs admission rounds and attempts until the call ends. sib, when
// not nil, are the parts of the split call this call is one of: the
// admission tells them of the call's tickets. first, when not nil, is room
// for the call's first attempt (RunIn).
func rounds[T any](ctx context.Context, l *Loop, estTokens int64, demote bool, attempt attempter[T], rep *report, sib *admission.Siblings, first *First) (T, error) {
	var zero T
	st := roundsPool.Get().(*roundState)
	stall, call := &st.stall, &st.call
	stall.start(l.clock, l.window, &l.deliveries, l.clock.Now())
	call.Init(l.adm, stall)
	if rep != nil {
		call.Observe(rep.o, rep.tr)
	} else {
		call.Observe(nil, nil)
	}
	if sib != nil {
		call.SetSiblings(sib)
	}
	hc := l.newHedgeCall(call, estTokens, demote)
	if hc == nil {
		// Without hedges nothing outlives the call's rounds: the next
		// call reuses their state (start and Init overwrite it whole).
		defer st.release()
	}
	// Run's attempts, on gates that give back on the caller's goroutine
	// and without hedges, leave nothing holding their ticket once they
	// return: the call's rounds take turns with the one in st.
	_, plain := attempt.(plainAttempt[T])
	reuse := plain && hc == nil && l.inlineGiveBack
	attempts, failures := 0, 0
	var last error
	var failed map[string]string // source → class of its last failed attempt
	for {
		if attempts >= l.maxAttempts {
			return zero, &errs.GatewayUnavailableError{Scope: l.scope, Attempts: attempts, Last: last}
		}
		as, into := newAttempt(st, reuse, first)
		t, rej, err := call.PickInto(ctx, estTokens, into)
		if err != nil {
			return zero, err
		}
		if t == nil {
			if err := call.OnNoRunnable(ctx, rej); err != nil {
				return zero, withLast(err, last)
			}
			continue
		}
		attempts++
		if first != nil && as == &first.s {
			first.used = true
		}
		var v T
		var class Class
		var src string
		if hc == nil && rep == nil {
			// Nothing but the attempt runs: no race to start, no observer
			// that may panic before attemptOnce guards the ticket.
			v, class, err = attemptOnce(ctx, l, stall, t, attempt, nil, as)
			src = t.Source
		} else {
			v, class, src, err = attemptOrRace(ctx, l, stall, hc, t, attempt, rep, &attempts, as)
		}
		switch class {
		case Success:
			l.deliveries.Mark(stall.lastEnd())
			return v, nil
		case CallerError, Canceled:
			return zero, err
		}
		last = err
		if demote {
			call.Failed(src)
		}
		if failed == nil {
			failed = make(map[string]string, 2)
		}
		failed[src] = class.String()
		switch {
		case class == Throttle && RetryAfterOf(err) > 0:
			// attemptOnce held the source off until the upstream's
			// Retry-After: fail over at once.
			continue
		case class == Fatal:
			// The breaker is open now; the next round skips the source.
			continue
		}
		if attempts >= l.maxAttempts {
			continue
		}
		failures++
		delay := l.backoff.Delay(failures, l.rand())
		if limit := stall.Horizon() + time.Millisecond; delay > limit {
			// Backoff is stall time too: it ends just past the moment the
			// call would be stalled, never beyond it, so a failing call
			// stalls on time (its worst wall time stays the window plus one
			// poll). That moment is the horizon: while the scope delivers,
			// a call past its own budget is not stalled and backs off in
			// full.
			delay = max(limit, 0)
		}
		if backoffOutlasts(ctx, delay) {
			// No attempt could start before the caller's deadline: end
			// now with what the attempts said, rather than sleep into
			// context.DeadlineExceeded and lose the last error.
			return zero, &errs.GatewayUnavailableError{Scope: l.scope, Attempts: attempts, Last: last}
		}
		if err := l.sleep(ctx, delay); err != nil {
			return zero, err
		}
		if stall.Stalled() {
			return zero, &errs.AllSourcesExhausted{Scope: l.scope, Reason: errs.ReasonStalled, Reasons: failed, Last: last}
		}
	}
}

// roundState is a call's stall clock and admission call, one allocation
// and pooled: both belong to the call's goroutine alone. ticket is the
// call's attempts' ticket when nothing holds a ticket past its attempt
// (newAttempt).
type roundState struct {
	stall  StallClock
	call   admission.Call
	ticket admission.Ticket
}

var roundsPool = sync.Pool{New: func() any { return new(roundState) }}

// release pools st. The admission call is cleared, so that a pooled state
// keeps no ctx of a call that ended while waiting; the stall clock points to
// the loop's own clock and deliveries only.
func (st *roundState) release() {
	st.call.Init(nil, nil)
	roundsPool.Put(st)
}

// attemptState is what one attempt allocates: its ctx (the call's end and
// the source's timeout), its hold and its response sink, together. It is
// not pooled: a goroutine the attempt started may keep its ctx.
type attemptState struct {
	ctx     callctx.Ctx
	hold    hold
	answers answers
}

// ticketedAttempt is an attempt's state allocated with its ticket, in one
// piece, for an attempt whose ticket may outlive it (a stream keeps it, a
// writer gives it back later, a hedge's race).
type ticketedAttempt struct {
	attemptState
	ticket admission.Ticket // filled by the round's PickInto
}

// newAttempt allocates a round's attempt state and the ticket its PickInto
// fills. With reuse, nothing holds a ticket of the call once its attempt
// returned (the gates gave it back on the attempt's goroutine, and no
// stream or hedge keeps it): the ticket is st's, zeroed, which spares each
// attempt the ticket's allocation. A round that admits nothing drops the
// state. first, unless used, is the state of a reused ticket's attempt.
func newAttempt(st *roundState, reuse bool, first *First) (*attemptState, *admission.Ticket) {
	if reuse {
		st.ticket = admission.Ticket{} // a previous round's or call's
		if first != nil && !first.used {
			return &first.s, &st.ticket
		}
		return new(attemptState), &st.ticket
	}
	ta := new(ticketedAttempt)
	return &ta.attemptState, &ta.ticket
}

// attemptOnce runs one attempt on t's source and gives back what t holds —
// in a defer, so a panic in the attempt leaks nothing and propagates.
func attemptOnce[T any](ctx context.Context, l *Loop, stall *StallClock, t *admission.Ticket, attempt attempter[T], ar *attemptReport, as *attemptState) (v T, class Class, err error) {
	ls := l.lookup(t.Source)
	ctx = ar.context(ctx)
	// One context carries the call's end and the source's timeout: under
	// the call's own Ctx it registers directly, with no hook of its own.
	// One reading of the clock starts the attempt, its stall accounting
	// and (on the wall clock) its deadline.
	now := l.nowAfter(stall.begun)
	if as == nil {
		as = new(attemptState)
	}
	ac := &as.ctx
	switch {
	case l.wall && ls.timeouts != nil:
		ac.InitOn(ctx, now, ls.timeouts)
	case l.wall:
		ac.InitAt(ctx, now, ls.Timeout)
	default:
		ac.Init(ctx, ls.Timeout)
	}
	actx, heard := as.answers.listenOn(ac, l.adm, t.Source)
	h := &as.hold // zeroed: set field by field
	h.ticket, h.actx, h.rep, h.start = t, ac, ar, now
	res := admission.Result{Outcome: gate.Released, Tokens: 0}
	var usage transport.Usage
	outcome := observe.OutcomePanic // until the attempt returns
	stall.beginAt(now)
	defer func() {
		end := l.nowAfter(now)
		stall.endAt(end)
		switch {
		case h.kept:
			heard.apply(ctx, l.adm, t.Source)
			// The stream reports its attempt, and the call, when it ends.
			if ar != nil {
				ar.r.handed = true
			}
		case ar != nil:
			endReported(ctx, l, t, h, heard, outcome, err, usage, res, end)
		default:
			heard.apply(ctx, l.adm, t.Source) // before Done: the budget hears the answer before the slot frees
			ac.Stop()
			l.noteLatencyAt(h, outcome, end)
			_ = t.Done(ctx, res)
		}
	}()
	v, usage, err = attempt.attempt(actx, &ls.Source, h)
	outcome = observe.OutcomeSuccess
	if err == nil {
		res = admission.Result{Outcome: gate.Success, Tokens: settled(usage)}
		return v, Success, nil
	}
	var zero T
	heard.hearError(err)
	class, res, outcome, err = l.failed(ctx, t.Source, &ls.Source, err)
	return zero, class, err
}

// endReported ends an attempt that an observer follows (h not kept): it
// gives back what the attempt held last, whatever the report does, so that
// an observer that panics keeps nothing of the admission.
//
//go:noinline
func endReported(ctx context.Context, l *Loop, t *admission.Ticket, h *hold, heard *answers, outcome string, err error, usage transport.Usage, res admission.Result, end time.Time) {
	defer func() {
		h.actx.Stop()
		_ = t.Done(ctx, res)
	}()
	heard.apply(ctx, l.adm, t.Source) // before Done: the budget hears the answer before the slot frees
	h.actx.Stop()
	l.noteLatencyAt(h, outcome, end)
	h.rep.end(outcome, err, usage) // before Done: the outcome precedes the state change it causes
}

// failed classifies the error err of an attempt on source (its settings
// src) and returns the attempt's class, its admission result, its
// outcome as observers see it and the error as the call returns it.
//
//go:noinline
func (l *Loop) failed(ctx context.Context, source string, src *config.Source, err error) (Class, admission.Result, string, error) {
	if o, ok := err.(errs.Originer); ok {
		// The error names where it came from when it ends the call.
		err = o.WithOrigin(l.scope, source)
	}
	if ctx.Err() != nil {
		// The caller gave up, or the gateway closed: the attempt says
		// nothing about the source.
		return Canceled, admission.Result{Outcome: gate.Released}, endedOutcome(ctx), ctx.Err()
	}
	if d, ok := sourceHTTPError(err, *src, l.clock.Now()); ok {
		// An SDK's error: described as an upstream HTTP failure so that its
		// Retry-After holds the source off; errors.As still reaches it.
		err = d
	}
	class := l.classify(err)
	res := resultOf(class)
	if class == Success {
		// A classifier that calls an error a success: the error cannot be
		// returned as a value, so it goes back to the caller untouched.
		class = CallerError
	}
	if ra := RetryAfterOf(err); class == Throttle && ra > 0 {
		// The upstream said when: hold the source off now, before the
		// deferred Done spends round trips on the gates, so that no round
		// of this process admits the source in between (a longer running
		// cooldown stays).
		l.adm.HoldOff(source, ra)
	}
	return class, res, outcomeOf(class), err
}

// nowAfter reads the loop's clock, knowing it read prev earlier in the
// same call. On the system clock it then reads the monotonic clock alone,
// half the cost of time.Now, and counts from prev: within a call the wall
// clock's steps do not matter, and its durations are what they measure.
func (l *Loop) nowAfter(prev time.Time) time.Time {
	if l.wall {
		return prev.Add(time.Since(prev))
	}
	return l.clock.Now()
}

// resultOf is the admission result of a failed attempt of class c: no tokens
// are charged for a failed attempt (the reservation is refunded).
func resultOf(c Class) admission.Result {
	switch c {
	case Failure:
		return admission.Result{Outcome: gate.Failure}
	case Fatal:
		return admission.Result{Outcome: gate.Fatal}
	case Throttle:
		return admission.Result{Outcome: gate.Released, Throttled: true}
	}
	return admission.Result{Outcome: gate.Released}
}

// settled is the token count to settle: the usage when the upstream reported
// one, otherwise the estimate stands.
func settled(u transport.Usage) int64 {
	if n := u.Billable(); n > 0 {
		return int64(n)
	}
	return -1
}

// backoffOutlasts reports whether a backoff of delay would end at or after
// ctx's deadline, while ctx is not done yet: the attempt after it could not
// start in time. A done ctx is left to the sleep, which returns its error.
// A ctx deadline fires on the wall clock, whatever the loop's clock.
func backoffOutlasts(ctx context.Context, delay time.Duration) bool {
	if delay <= 0 || ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) <= delay
}

// withLast attaches the call's last attempt error to the admission's verdict,
// so that a call that failed on a bad key and then found the breaker open
// still shows the 401 (errors.As reaches it).
func withLast(err, last error) error {
	if last == nil {
		return err
	}
	var coe *errs.CircuitOpenError
	if errors.As(err, &coe) {
		coe.Last = last
	}
	var ase *errs.AllSourcesExhausted
	if errors.As(err, &ase) {
		ase.Last = last
	}
	return err
}

// Breaker outcomes by name, for readability at the call sites.
const (
	success  = gate.Success
	released = gate.Released
)
