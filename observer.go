package pgw

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
)

// The observer types, re-exported from package observe (SPEC §12). Hand an
// Observer to the gateway with WithObserver; it also receives the optional
// events whose interfaces it implements (observe.AttemptStartObserver,
// observe.CallObserver, …). Wrap an observer that does more than update
// counters in observe.Async, so that it never slows a call.
type (
	// Observer receives attempt records and breaker state changes, called
	// synchronously on the calls' goroutines, outside every lock, possibly
	// concurrently: it must be safe for concurrent use and quick.
	Observer = observe.Observer
	// ObserverFuncs adapts functions to every observer interface; a nil
	// field ignores its events.
	ObserverFuncs = observe.Funcs
	// AttemptRecord is one finished attempt of a governed call.
	AttemptRecord = observe.AttemptRecord
	// AttemptStart is an admitted attempt beginning on a source.
	AttemptStart = observe.AttemptStart
	// StateChange is a breaker transition of one source, as this process saw
	// it in a gate answer.
	StateChange = observe.StateChange
	// CallResult is the end of one governed call.
	CallResult = observe.CallResult
)

// The values of AttemptRecord.Outcome: the classes of SPEC §7, plus
// OutcomeAbandoned for a chat stream closed before its end.
const (
	OutcomeSuccess     = observe.OutcomeSuccess
	OutcomeFailure     = observe.OutcomeFailure
	OutcomeThrottle    = observe.OutcomeThrottle
	OutcomeFatal       = observe.OutcomeFatal
	OutcomeCallerError = observe.OutcomeCallerError
	OutcomeCanceled    = observe.OutcomeCanceled
	OutcomeAbandoned   = observe.OutcomeAbandoned
)

// The values of CallResult.Result.
const (
	ResultSuccess        = observe.ResultSuccess
	ResultCircuitOpen    = observe.ResultCircuitOpen
	ResultQuotaExhausted = observe.ResultQuotaExhausted
	ResultStalled        = observe.ResultStalled
	ResultUnavailable    = observe.ResultUnavailable
	ResultCallerError    = observe.ResultCallerError
	ResultCanceled       = observe.ResultCanceled
	ResultAbandoned      = observe.ResultAbandoned
	ResultError          = observe.ResultError
)

// reporter sends the events the gateway sees itself — attempts, breaker
// transitions seen in gate answers, call results — to the log and the
// observer (nil: log only).
type reporter struct {
	log *slog.Logger
	obs observe.Full
}

func (r *reporter) attemptStart(a AttemptStart) {
	if r.obs != nil {
		r.obs.ObserveAttemptStart(a)
	}
}

func (r *reporter) call(c CallResult) {
	if r.obs != nil {
		r.obs.ObserveCall(c)
	}
}

func (r *reporter) attempt(ctx context.Context, a AttemptRecord) {
	var he *HTTPError
	if errors.As(a.Err, &he) {
		a.Status, a.RetryAfter = he.StatusCode, he.RetryAfter
	}
	if r.obs != nil {
		r.obs.ObserveAttempt(a)
	}
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("scope", a.Scope),
		slog.String("source", a.Source),
		slog.Int("attempt", a.Attempt),
		slog.String("outcome", a.Outcome),
		slog.Duration("latency", a.Latency.Round(time.Microsecond)))
	if a.FirstChunk > 0 {
		attrs = append(attrs, slog.Duration("first_chunk", a.FirstChunk.Round(time.Microsecond)))
	}
	if a.Usage.TotalTokens > 0 {
		attrs = append(attrs, slog.Int("tokens", a.Usage.TotalTokens))
	}
	if a.Err != nil {
		attrs = append(attrs, slog.String("err", a.Err.Error()))
	}
	r.log.LogAttrs(ctx, slog.LevelDebug, "pgw: attempt", attrs...)
}

// stateChange goes to the observer only: admission logs the state changes
// it sees itself.
func (r *reporter) stateChange(s StateChange) {
	if r.obs != nil {
		r.obs.ObserveStateChange(s)
	}
}

// outcomeOf classifies an attempt's error as the loops do (retry.Classify),
// with the caller's cancellation first.
func outcomeOf(callCtx context.Context, err error) string {
	if err == nil {
		return OutcomeSuccess
	}
	if callCtx != nil && callCtx.Err() != nil {
		return OutcomeCanceled
	}
	return retry.Classify(err).String()
}

// callInfo travels in a call's context down to the observed transports: the
// scope, the call's own context (to tell a cancellation from a failure) and
// the attempt count.
type callInfo struct {
	scope    string
	ctx      context.Context
	attempts atomic.Int32
	last     atomic.Pointer[string] // the source of the latest attempt
}

// begin counts an attempt on source and reports its start.
func (ci *callInfo) begin(rep *reporter, source string) AttemptRecord {
	n := int(ci.attempts.Add(1))
	ci.last.Store(&source)
	now := time.Now()
	rep.attemptStart(AttemptStart{Scope: ci.scope, Source: source, Attempt: n, At: now})
	return AttemptRecord{Scope: ci.scope, Source: source, Attempt: n, Start: now}
}

func (ci *callInfo) lastSource() string {
	if p := ci.last.Load(); p != nil {
		return *p
	}
	return ""
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, scope string) (context.Context, *callInfo) {
	ci := &callInfo{scope: scope, ctx: ctx}
	return context.WithValue(ctx, callInfoKey{}, ci), ci
}

func callInfoOf(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	if ci == nil {
		ci = &callInfo{ctx: ctx}
	}
	return ci
}

// observedGate reports the transitions it sees in a breaker gate's answers,
// with this process's outcome counts since the previous one. The set of
// sources is fixed at construction, so the common path is an atomic swap
// and, for Record, one short per-source lock.
type observedGate struct {
	gate.ProviderGate
	scope   string
	rep     *reporter
	sources map[string]*observedSource
}

type observedSource struct {
	state  atomic.Uint32 // gate.State last seen; zero: Closed
	mu     sync.Mutex
	counts observe.Counts // since the last change seen
}

func newObservedGate(g gate.ProviderGate, scope string, sources []Source, rep *reporter) *observedGate {
	o := &observedGate{ProviderGate: g, scope: scope, rep: rep, sources: make(map[string]*observedSource, len(sources))}
	for _, s := range sources {
		o.sources[s.Name] = &observedSource{}
	}
	return o
}

// TryEnter passes through. A granted probe shows HalfOpen, a rejection the
// state that rejected; an ordinary admission is not used as evidence, since
// it may have been decided before a concurrent call's Record opened the
// breaker.
func (o *observedGate) TryEnter(ctx context.Context, source string) (gate.Decision, error) {
	d, err := o.ProviderGate.TryEnter(ctx, source)
	switch {
	case err != nil:
	case d.Probe:
		o.see(source, gate.HalfOpen, 0)
	case !d.Allowed:
		o.see(source, d.State, d.RetryAfter)
	}
	return d, err
}

// Record passes through, counts an applied outcome and notes the state after
// it.
func (o *observedGate) Record(ctx context.Context, source string, d gate.Decision, out gate.Outcome) (gate.Update, error) {
	u, err := o.ProviderGate.Record(ctx, source, d, out)
	if err != nil {
		return u, err
	}
	if s := o.sources[source]; s != nil && u.Applied {
		s.mu.Lock()
		switch out {
		case gate.Success:
			s.counts.Successes++
			s.counts.ConsecutiveFailures = 0
		case gate.Failure:
			s.counts.Failures++
			s.counts.ConsecutiveFailures++
		case gate.Fatal:
			s.counts.Fatal++
			s.counts.ConsecutiveFailures++
		case gate.Released:
			s.counts.Released++
		}
		s.mu.Unlock()
	}
	o.see(source, u.State, u.RetryAfter)
	return u, err
}

func (o *observedGate) see(source string, st gate.State, retryAfter time.Duration) {
	s := o.sources[source]
	if s == nil {
		return
	}
	from := gate.State(s.state.Swap(uint32(st)))
	if from == st {
		return
	}
	s.mu.Lock()
	counts := s.counts
	s.counts = observe.Counts{}
	s.mu.Unlock()
	o.rep.stateChange(StateChange{Scope: o.scope, Source: source, From: from, To: st,
		RetryAfter: retryAfter, Counts: counts, At: time.Now()})
}

// observedTransports wrap the transports so that each attempt is reported.
type observedChat struct {
	tr  ChatTransport
	rep *reporter
}

func (o observedChat) ChatStream(ctx context.Context, src Source, req ChatRequest) (ChatStream, error) {
	ci := callInfoOf(ctx)
	rec := ci.begin(o.rep, src.Name)
	st, err := o.tr.ChatStream(ctx, src, req)
	ws := &observedStream{st: st, rep: o.rep, ctx: ctx, ci: ci, rec: rec}
	if err != nil {
		ws.end(err)
		return nil, err
	}
	return ws, nil
}

// observedStream reports its attempt once, when the stream ends: io.EOF, an
// error, or Close before either.
type observedStream struct {
	st    ChatStream
	rep   *reporter
	ctx   context.Context // the attempt's
	ci    *callInfo
	rec   AttemptRecord
	mu    sync.Mutex
	first bool
	usage Usage
	once  sync.Once
}

func (s *observedStream) Recv() (ChatChunk, error) {
	ch, err := s.st.Recv()
	if err != nil {
		if err == io.EOF {
			s.end(nil)
		} else {
			s.end(err)
		}
		return ch, err
	}
	s.mu.Lock()
	if !s.first {
		s.first = true
		s.rec.FirstChunk = time.Since(s.rec.Start)
	}
	if ch.Usage != nil {
		s.usage = *ch.Usage
	}
	s.mu.Unlock()
	return ch, nil
}

func (s *observedStream) Close() error {
	err := s.st.Close()
	s.once.Do(func() { s.report(OutcomeAbandoned, nil) })
	return err
}

func (s *observedStream) end(err error) {
	s.once.Do(func() {
		// The loop cancels a silent attempt with this cause; the transport
		// sees only a cancellation.
		if cause := context.Cause(s.ctx); err != nil && errors.Is(cause, retry.ErrFirstTokenTimeout) {
			err = cause
		}
		s.report(outcomeOf(s.ci.ctx, err), err)
	})
}

func (s *observedStream) report(outcome string, err error) {
	s.mu.Lock()
	rec := s.rec
	rec.Usage = s.usage
	s.mu.Unlock()
	rec.Outcome, rec.Err, rec.Latency = outcome, err, time.Since(rec.Start)
	s.rep.attempt(s.ctx, rec)
}

type observedEmbed struct {
	tr  EmbedTransport
	rep *reporter
}

func (o observedEmbed) Embed(ctx context.Context, src Source, req EmbedRequest) (EmbedResponse, error) {
	ci := callInfoOf(ctx)
	rec := ci.begin(o.rep, src.Name)
	resp, err := o.tr.Embed(ctx, src, req)
	rec.Outcome, rec.Err, rec.Latency, rec.Usage = outcomeOf(ci.ctx, err), err, time.Since(rec.Start), resp.Usage
	o.rep.attempt(ctx, rec)
	return resp, err
}

type observedOCR struct {
	tr  OCRTransport
	rep *reporter
}

func (o observedOCR) OCR(ctx context.Context, src Source, req OCRRequest) (OCRResponse, error) {
	ci := callInfoOf(ctx)
	rec := ci.begin(o.rep, src.Name)
	resp, err := o.tr.OCR(ctx, src, req)
	rec.Outcome, rec.Err, rec.Latency, rec.Usage = outcomeOf(ci.ctx, err), err, time.Since(rec.Start), resp.Usage
	o.rep.attempt(ctx, rec)
	return resp, err
}
