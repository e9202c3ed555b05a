package retry

import (
	"context"
	"errors"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// errPanicked is the CallResult.Err of a call whose attempt panicked (the
// panic itself goes on up the caller's stack).
var errPanicked = errors.New("pgw/retry: the attempt panicked")

// report is one call's reporting to the loop's observer (Config.Observer);
// nil when the loop has none, or none that is enabled when the call starts
// (observe.Enabled), so such a call allocates nothing for it. Everything is reported on the call's goroutine, in the
// order it happens: attempt start, attempt record, then — from the
// admission, when the outcome moved the breaker — the state change, and
// the call's result last.
type report struct {
	o        observe.Full
	scope    string
	clock    gate.Clock
	start    time.Time
	source   string // the last attempt's
	attempts int
	handed   bool // a chat stream took the call over: it reports the end
}

func (l *Loop) newReport() *report {
	if !observe.Enabled(l.obs) {
		return nil
	}
	return &report{o: l.obs, scope: l.scope, clock: l.clock, start: l.clock.Now()}
}

// attemptReport is one attempt's record in the making.
type attemptReport struct {
	r   *report
	rec observe.AttemptRecord
}

// beginAttempt reports the start of attempt n on t's source.
func (r *report) beginAttempt(t *admission.Ticket, n int) *attemptReport {
	if r == nil {
		return nil
	}
	r.attempts, r.source = n, t.Source
	now := r.clock.Now()
	r.o.ObserveAttemptStart(observe.AttemptStart{Scope: r.scope, Source: t.Source, Attempt: n, Probe: t.Decision.Probe, At: now})
	return &attemptReport{r: r, rec: observe.AttemptRecord{
		Scope: r.scope, Source: t.Source, Attempt: n, Probe: t.Decision.Probe, Start: now,
	}}
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
}

// end reports the call's result.
func (r *report) end(result string, err error) {
	if r == nil {
		return
	}
	r.o.ObserveCall(observe.CallResult{
		Scope: r.scope, Result: result, Source: r.source, Attempts: r.attempts, Err: err,
		Start: r.start, Duration: r.clock.Now().Sub(r.start),
	})
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
	case errors.As(err, &coe):
		return observe.ResultCircuitOpen
	case errors.As(err, &ase) && ase.Reason == errs.ReasonStalled:
		return observe.ResultStalled
	case errors.As(err, &ase):
		return observe.ResultQuotaExhausted
	case errors.As(err, &gue):
		return observe.ResultUnavailable
	case ctx.Err() != nil:
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
