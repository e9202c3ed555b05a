package retry

import (
	"context"
	"errors"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/ownpanic"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// errPanicked is the CallResult.Err of a call whose attempt panicked (the
// panic itself goes on up the caller's stack).
var errPanicked = errors.New("pgw/retry: the attempt panicked")

// report is one call's reporting to the loop's observer (Config.Observer),
// or to those of its members that are enabled when the call starts
// (observe.ForCall); nil when the loop has none, or none that is enabled,
// so such a call allocates nothing for it. Everything is reported on the call's goroutine, in the
// order it happens: attempt start, attempt record, then — from the
// admission, when the outcome moved the breaker — the state change, and
// the call's result last.
type report struct {
	o        observe.Full
	tr       observe.ContextObserver // nil: o follows no contexts
	ctx      context.Context         // the call's, from tr.StartCall
	op       string                  // observe.Operation…
	model    string                  // the caller's model; empty: each source's
	sources  map[string]config.Source
	scope    string
	clock    gate.Clock
	start    time.Time
	source   string // the last attempt's
	attempts int
	handed   bool // a chat stream took the call over: it reports the end
}

func (l *Loop) newReport() *report {
	o := observe.ForCall(l.obs)
	if o == nil {
		return nil
	}
	tr := l.tr
	if tr != nil {
		tr = observe.AsContext(o) // o may hold only some of l.obs's members
	}
	return &report{o: o, tr: tr, sources: l.sources, scope: l.scope, clock: l.clock, start: l.clock.Now()}
}

// begin hands the call's ctx to a ContextObserver and returns the ctx the
// call runs under.
func (r *report) begin(ctx context.Context, op, model string) context.Context {
	if r == nil {
		return ctx
	}
	r.op, r.model = op, model
	if r.tr == nil {
		return ctx
	}
	r.ctx = r.tr.StartCall(ctx, observe.CallStart{Scope: r.scope, Operation: op, Model: model, At: r.start})
	return r.ctx
}

// attemptReport is one attempt's record in the making.
type attemptReport struct {
	r     *report
	rec   observe.AttemptRecord
	start observe.AttemptStart
	ctx   context.Context // from r.tr.StartAttempt; nil without one
}

// beginAttempt reports the start of attempt n on t's source.
func (r *report) beginAttempt(t *admission.Ticket, n int) *attemptReport {
	if r == nil {
		return nil
	}
	r.attempts, r.source = n, t.Source
	now := r.clock.Now()
	src := r.sources[t.Source]
	model := r.model
	if model == "" {
		model = src.Model
	}
	ev := observe.AttemptStart{Scope: r.scope, Source: t.Source, Attempt: n, Probe: t.Decision.Probe, At: now,
		Operation: r.op, Model: model, BaseURL: src.RedactedBaseURL(), Provider: string(src.Provider), Priority: src.Priority, State: t.Decision.State}
	r.o.ObserveAttemptStart(ev)
	return &attemptReport{r: r, start: ev, rec: observe.AttemptRecord{
		Scope: r.scope, Source: t.Source, Attempt: n, Probe: t.Decision.Probe, Start: now,
	}}
}

// context hands the attempt's ctx to a ContextObserver and returns the ctx
// the attempt runs under.
func (a *attemptReport) context(ctx context.Context) context.Context {
	if a == nil || a.r.tr == nil {
		return ctx
	}
	a.ctx = a.r.tr.StartAttempt(ctx, a.start)
	return a.ctx
}

// firstChunk notes that the attempt's first chunk arrived.
func (a *attemptReport) firstChunk() {
	if a != nil {
		a.rec.FirstChunk = a.r.clock.Now().Sub(a.rec.Start)
	}
}

// end reports the attempt's record.
func (a *attemptReport) end(outcome string, err error, usage transport.Usage) {
	if a == nil {
		return
	}
	rec := a.rec
	rec.Outcome, rec.Err, rec.Usage = outcome, err, usage
	rec.Latency = a.r.clock.Now().Sub(rec.Start)
	var he *errs.HTTPError
	if errors.As(err, &he) {
		rec.Status, rec.RetryAfter = he.StatusCode, he.RetryAfter
	}
	a.r.o.ObserveAttempt(rec)
	if a.ctx != nil {
		a.r.tr.EndAttempt(a.ctx, rec)
	}
}

// end reports the call's result. A call that the gateway's Close ended
// reports ErrClosed, the error the caller gets, whatever its attempt saw.
func (r *report) end(result string, err error) {
	if r == nil {
		return
	}
	if result == observe.ResultClosed {
		err = errs.ErrClosed
	}
	res := observe.CallResult{
		Scope: r.scope, Result: result, Source: r.source, Attempts: r.attempts, Err: err,
		Start: r.start, Duration: r.clock.Now().Sub(r.start),
	}
	r.o.ObserveCall(res)
	if r.ctx != nil {
		r.tr.EndCall(r.ctx, res)
	}
}

// endedOutcome is the AttemptRecord.Outcome of an attempt that its call's
// ctx ended: OutcomeClosed when the gateway's Close ended it, else
// OutcomeCanceled (the caller's cancellation or deadline). Either way the
// attempt's class is Canceled: it says nothing about the source.
func endedOutcome(ctx context.Context) string {
	if errs.ClosedBy(ctx) {
		return observe.OutcomeClosed
	}
	return observe.OutcomeCanceled
}

// refuse reports a call refused before admission because its request
// cannot be sent (err, a *transport.RequestError): a CallResult
// "caller_error" with no attempt and no source, like a request an upstream
// rejected, so that a dashboard of caller errors counts both. It returns
// err.
func (l *Loop) refuse(ctx context.Context, op, model string, err error) error {
	if rep := l.newReport(); rep != nil {
		rep.begin(ctx, op, model)
		rep.end(observe.ResultCallerError, err)
	}
	return err
}

// outcomeOf is an ended attempt's AttemptRecord.Outcome.
func outcomeOf(class Class) string {
	return class.String() // the observe.Outcome… names are the class names
}

// callResult is a finished call's CallResult.Result.
func callResult(ctx context.Context, l *Loop, err error) string {
	if err == nil {
		return observe.ResultSuccess
	}
	var coe *errs.CircuitOpenError
	var ase *errs.AllSourcesExhausted
	var gue *errs.GatewayUnavailableError
	switch {
	case errs.ClosedBy(ctx):
		// Close ended the call first: the caller gets ErrClosed, whatever
		// the call's own end was (the gateway returns ErrClosed for it).
		return observe.ResultClosed
	case errors.As(err, &coe):
		return observe.ResultCircuitOpen
	case errors.As(err, &ase) && ase.Reason == errs.ReasonStalled:
		return observe.ResultStalled
	case errors.As(err, &ase):
		return observe.ResultQuotaExhausted
	case errors.As(err, &gue):
		return observe.ResultUnavailable
	case ctx.Err() != nil || callersDeadline(ctx, err):
		return observe.ResultCanceled
	}
	switch l.classify(err) {
	case CallerError, Success: // an error classified Success is returned as a caller error
		return observe.ResultCallerError
	case Canceled:
		return observe.ResultCanceled
	}
	return observe.ResultError
}

// callersDeadline reports whether err, a call's error, is the caller's
// deadline reported before ctx says so: the admission returns a bare
// context.DeadlineExceeded when a gate's round trip (a Redis client's
// socket timer, set from ctx's deadline) ended a moment before ctx did.
func callersDeadline(ctx context.Context, err error) bool {
	_, ok := ctx.Deadline()
	return ok && err == context.DeadlineExceeded
}

// The operations of the typed loops, as the observer is told.
const (
	opChat       = observe.OperationChat
	opEmbeddings = observe.OperationEmbeddings
	opOCR        = observe.OperationOCR
)

// owned runs f, reports about source on a goroutine pgw started (a hedged
// attempt's, after its race), and recovers an observer's panic in it:
// logged at Warn, redacted as an attempt's panic is (redactedPanic). On the
// caller's goroutine a report runs bare, and its panic goes on to the
// caller.
func (l *Loop) owned(source string, f func()) {
	ownpanic.Run(l.log, func(p any) string { return redactedPanic(p, l.source(source)) }, f, l.scope, source)
}
