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
	"github.com/pgw-go/pgw/retry"
)

// Observer receives what the gateway sees (SPEC §12): one AttemptRecord per
// attempt and one StateChange per breaker transition. Its methods are
// called synchronously on the calls' goroutines, outside every lock, possibly
// concurrently: they must be safe for concurrent use and quick (hand slow
// work to a goroutine of your own). Waits are not reported here; they are
// logged at Info ("pgw: no source may run; waiting", "pgw: wait over").
type Observer interface {
	// ObserveAttempt is called when an attempt ends.
	ObserveAttempt(AttemptRecord)
	// ObserveStateChange is called when the gateway sees a source's breaker
	// in another state than it last saw.
	ObserveStateChange(StateChange)
}

// ObserverFuncs adapts two functions to Observer; a nil field ignores its
// events. It is as safe for concurrent use as its functions are.
type ObserverFuncs struct {
	Attempt     func(AttemptRecord)
	StateChange func(StateChange)
}

// ObserveAttempt calls f.Attempt.
func (f ObserverFuncs) ObserveAttempt(a AttemptRecord) {
	if f.Attempt != nil {
		f.Attempt(a)
	}
}

// ObserveStateChange calls f.StateChange.
func (f ObserverFuncs) ObserveStateChange(s StateChange) {
	if f.StateChange != nil {
		f.StateChange(s)
	}
}

// The values of AttemptRecord.Outcome: the classes of SPEC §7, plus
// OutcomeAbandoned for a chat stream closed before its end.
const (
	OutcomeSuccess     = "success"
	OutcomeFailure     = "failure"
	OutcomeThrottle    = "throttle"
	OutcomeFatal       = "fatal"
	OutcomeCallerError = "caller_error"
	OutcomeCanceled    = "canceled"
	OutcomeAbandoned   = "abandoned"
)

// AttemptRecord is one attempt of a governed call on one source.
type AttemptRecord struct {
	// Scope and Source name where the attempt ran.
	Scope, Source string
	// Attempt is the attempt's number within its call, from 1. The parts of
	// a split call (embedding sub-batches, OCR pages) share one count.
	Attempt int
	// Outcome is how the gateway classifies the attempt: one of the
	// Outcome… constants.
	Outcome string
	// Err is the attempt's error; nil on success.
	Err error
	// Start is when the attempt began; Latency how long it ran (for a chat
	// stream: until its end).
	Start   time.Time
	Latency time.Duration
	// FirstChunk is, for a chat attempt that delivered a chunk, the time to
	// its first chunk; 0 otherwise.
	FirstChunk time.Duration
	// Usage is the token count the upstream reported (zero if none).
	Usage Usage
}

// StateChange is a breaker transition of one source, as this process saw it
// in a gate answer (TryEnter, Record). With the Redis backend it may have been
// caused by another process. Under concurrency a change may be reported a
// little late, never invented.
type StateChange struct {
	Scope, Source string
	From, To      State
	// RetryAfter is the gate's RetryAfter with the new state (the pinned
	// contract: for Open, the time until the cooldown ends).
	RetryAfter time.Duration
	// At is when the gateway saw the change.
	At time.Time
}

// reporter sends attempts and state changes to the log and the observer.
type reporter struct {
	log *slog.Logger
	obs Observer
}

func (r *reporter) attempt(ctx context.Context, a AttemptRecord) {
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

func (r *reporter) stateChange(ctx context.Context, s StateChange) {
	if r.obs != nil {
		r.obs.ObserveStateChange(s)
	}
	level := slog.LevelInfo
	if s.To == gate.Open {
		level = slog.LevelWarn
	}
	r.log.LogAttrs(ctx, level, "pgw: breaker state changed",
		slog.String("scope", s.Scope),
		slog.String("source", s.Source),
		slog.String("from", s.From.String()),
		slog.String("to", s.To.String()),
		slog.Duration("retry_after", s.RetryAfter.Round(time.Millisecond)))
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

// observedGate reports the transitions it sees in a breaker gate's answers.
// The states slice is fixed at construction (one entry per source), so the
// hot path is one atomic swap.
type observedGate struct {
	gate.ProviderGate
	scope  string
	rep    *reporter
	states map[string]*atomic.Uint32
}

func newObservedGate(g gate.ProviderGate, scope string, sources []Source, rep *reporter) *observedGate {
	o := &observedGate{ProviderGate: g, scope: scope, rep: rep, states: make(map[string]*atomic.Uint32, len(sources))}
	for _, s := range sources {
		o.states[s.Name] = new(atomic.Uint32) // zero: Closed
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
		o.see(ctx, source, gate.HalfOpen, 0)
	case !d.Allowed:
		o.see(ctx, source, d.State, d.RetryAfter)
	}
	return d, err
}

// Record passes through and notes the state after the outcome.
func (o *observedGate) Record(ctx context.Context, source string, d gate.Decision, out gate.Outcome) (gate.Update, error) {
	u, err := o.ProviderGate.Record(ctx, source, d, out)
	if err == nil {
		o.see(ctx, source, u.State, u.RetryAfter)
	}
	return u, err
}

func (o *observedGate) see(ctx context.Context, source string, s gate.State, retryAfter time.Duration) {
	a := o.states[source]
	if a == nil {
		return
	}
	if from := gate.State(a.Swap(uint32(s))); from != s {
		o.rep.stateChange(ctx, StateChange{Scope: o.scope, Source: source, From: from, To: s,
			RetryAfter: retryAfter, At: time.Now()})
	}
}

// observedTransports wrap the transports so that each attempt is reported.
type observedChat struct {
	tr  ChatTransport
	rep *reporter
}

func (o observedChat) ChatStream(ctx context.Context, src Source, req ChatRequest) (ChatStream, error) {
	ci := callInfoOf(ctx)
	rec := AttemptRecord{Scope: ci.scope, Source: src.Name, Attempt: int(ci.attempts.Add(1)), Start: time.Now()}
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
	rec := AttemptRecord{Scope: ci.scope, Source: src.Name, Attempt: int(ci.attempts.Add(1)), Start: time.Now()}
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
	rec := AttemptRecord{Scope: ci.scope, Source: src.Name, Attempt: int(ci.attempts.Add(1)), Start: time.Now()}
	resp, err := o.tr.OCR(ctx, src, req)
	rec.Outcome, rec.Err, rec.Latency, rec.Usage = outcomeOf(ci.ctx, err), err, time.Since(rec.Start), resp.Usage
	o.rep.attempt(ctx, rec)
	return resp, err
}
