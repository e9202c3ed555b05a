package otel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// pgw's own span attributes and event names.
const (
	// On "pgw.call".
	AttrScope     = attribute.Key("pgw.scope")     // the call's scope
	AttrOperation = attribute.Key("pgw.operation") // chat, embeddings, ocr; absent for a custom function
	AttrResult    = attribute.Key("pgw.result")    // observe.Result…
	AttrAttempts  = attribute.Key("pgw.attempts")  // attempts the call made
	AttrWaited    = attribute.Key("pgw.waited")    // seconds the call waited for a runnable source, in all
	AttrWaits     = attribute.Key("pgw.waits")     // waits the call went through

	// On an attempt's span ("pgw.call" carries AttrSource too: the last
	// attempt's source).
	AttrSource       = attribute.Key("pgw.source")        // the source's name
	AttrPriority     = attribute.Key("pgw.priority")      // the source's priority tier
	AttrBreakerState = attribute.Key("pgw.breaker.state") // the breaker's state when it admitted the attempt
	AttrProbe        = attribute.Key("pgw.probe")         // the attempt held the HalfOpen probe lease
	AttrAttempt      = attribute.Key("pgw.attempt")       // the attempt's number within its call, from 1
	AttrOutcome      = attribute.Key("pgw.outcome")       // observe.Outcome…
	AttrRetryAfter   = attribute.Key("pgw.retry_after")   // seconds of the upstream's Retry-After, which pgw honoured

	// On a "pgw.wait" event.
	AttrWaitReason   = attribute.Key("pgw.wait.reason")   // circuit_open or quota_full
	AttrWaitExpected = attribute.Key("pgw.wait.expected") // seconds the wait was expected to last when it began; 0 unknown
	AttrWaitDuration = attribute.Key("pgw.wait.duration") // seconds it lasted
	AttrWaitNaps     = attribute.Key("pgw.wait.naps")     // sleeps it took

	// SpanCall is the name of a call's span, EventWait of a wait's event.
	SpanCall  = "pgw.call"
	EventWait = "pgw.wait"
	// SpanAttempt names an attempt's span when the call is a custom
	// function, which names no GenAI operation.
	SpanAttempt = "pgw.attempt"
)

type callKey struct{}

// callState is one call's span and what it sums up. Waits are reported on
// the call's goroutine, its end maybe on a stream's Close from another.
type callState struct {
	span   trace.Span
	waited atomic.Int64 // nanoseconds
	waits  atomic.Int64
}

// StartCall starts the call's "pgw.call" span under the caller's.
func (ob *Observer) StartCall(ctx context.Context, e observe.CallStart) context.Context {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, AttrScope.String(e.Scope))
	if e.Operation != "" {
		attrs = append(attrs, AttrOperation.String(e.Operation))
	}
	if e.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(e.Model))
	}
	ctx, span := ob.tracer.Start(ctx, SpanCall, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(e.At), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, callKey{}, &callState{span: span})
}

// EndWait adds a "pgw.wait" event to the call's span, stamped when the wait
// began.
func (ob *Observer) EndWait(ctx context.Context, e observe.WaitEnd) {
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil {
		return
	}
	cs.waited.Add(int64(e.Waited))
	cs.waits.Add(1)
	if !cs.span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		AttrWaitReason.String(e.Reason),
		AttrWaitExpected.Float64(e.RetryAfter.Seconds()),
		AttrWaitDuration.Float64(e.Waited.Seconds()),
		AttrWaitNaps.Int(e.Naps),
	}
	if e.Source != "" {
		attrs = append(attrs, AttrSource.String(e.Source))
	}
	if e.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(ctx, e.Err)))
	}
	cs.span.AddEvent(EventWait, trace.WithTimestamp(e.At.Add(-e.Waited)), trace.WithAttributes(attrs...))
}

// EndCall ends the call's span with its result.
func (ob *Observer) EndCall(ctx context.Context, e observe.CallResult) {
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil {
		return
	}
	if cs.span.IsRecording() {
		attrs := []attribute.KeyValue{
			AttrResult.String(e.Result),
			AttrAttempts.Int(e.Attempts),
			AttrWaited.Float64(time.Duration(cs.waited.Load()).Seconds()),
			AttrWaits.Int64(cs.waits.Load()),
		}
		if e.Source != "" {
			attrs = append(attrs, AttrSource.String(e.Source))
		}
		if e.Result != observe.ResultSuccess && e.Result != observe.ResultAbandoned {
			attrs = append(attrs, semconv.ErrorTypeKey.String(e.Result))
			cs.span.SetStatus(codes.Error, e.Result)
		}
		cs.span.SetAttributes(attrs...)
	}
	cs.span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

type attemptKey struct{}

// attemptState is one attempt's span, the attributes its metrics share,
// and what the transport told of the answer. It is the attempt's
// observe.AttemptHooks.
type attemptState struct {
	ob      *Observer
	ctx     context.Context // the attempt's, span included: for the propagator
	span    trace.Span
	op      string               // gen_ai.operation.name; empty for a custom function
	attrs   []attribute.KeyValue // the metrics' common attributes
	model   atomic.Pointer[string]
	started time.Time
}

// StartAttempt starts the attempt's CLIENT span under the call's and puts
// the span and the attempt's hooks in the ctx the transport gets.
func (ob *Observer) StartAttempt(ctx context.Context, e observe.AttemptStart) context.Context {
	op := genaiOperation(e.Operation)
	name := SpanAttempt
	attrs := make([]attribute.KeyValue, 0, 12)
	if op != "" {
		name = op
		if e.Model != "" {
			name = op + " " + e.Model
		}
		attrs = append(attrs, semconv.GenAIOperationNameKey.String(op), semconv.GenAIProviderNameKey.String(genaiProvider(e.Provider)))
		if e.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(e.Model))
		}
	}
	attrs = append(attrs, ob.server(e.BaseURL)...)
	common := len(attrs) // the metrics' attributes end here
	attrs = append(attrs,
		AttrScope.String(e.Scope),
		AttrSource.String(e.Source),
		AttrPriority.Int(e.Priority),
		AttrBreakerState.String(e.State.String()),
		AttrProbe.Bool(e.Probe),
		AttrAttempt.Int(e.Attempt),
	)
	ctx, span := ob.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(e.At), trace.WithAttributes(attrs...))
	as := &attemptState{ob: ob, span: span, op: op, attrs: attrs[:common:common], started: e.At}
	ctx = context.WithValue(ctx, attemptKey{}, as)
	as.ctx = ctx
	return observe.WithAttemptHooks(ctx, as)
}

// InjectHeaders writes the attempt's trace context into an outgoing
// request's headers.
func (as *attemptState) InjectHeaders(h http.Header) {
	as.ob.prop.Inject(as.ctx, propagation.HeaderCarrier(h))
}

// NoteResponseModel keeps the model the upstream says answered.
func (as *attemptState) NoteResponseModel(model string) {
	as.model.Store(&model)
}

// EndAttempt ends the attempt's span with its outcome, and records the
// GenAI metrics of an attempt of a GenAI operation.
func (ob *Observer) EndAttempt(ctx context.Context, e observe.AttemptRecord) {
	as, _ := ctx.Value(attemptKey{}).(*attemptState)
	if as == nil {
		return
	}
	// An abandoned answer and a lost hedge race were ended by pgw or its
	// caller, not failed: neither is an error.
	var errType string
	if e.Outcome != observe.OutcomeSuccess && e.Outcome != observe.OutcomeAbandoned && e.Outcome != observe.OutcomeHedgeLost {
		errType = e.Outcome
		if e.Status > 0 {
			errType = strconv.Itoa(e.Status)
		}
	}
	respModel := ""
	if m := as.model.Load(); m != nil {
		respModel = *m
	}
	if as.span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, AttrOutcome.String(e.Outcome))
		if respModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(respModel))
		}
		if e.Usage.PromptTokens > 0 {
			attrs = append(attrs, semconv.GenAIUsageInputTokens(e.Usage.PromptTokens))
		}
		if e.Usage.CompletionTokens > 0 {
			attrs = append(attrs, semconv.GenAIUsageOutputTokens(e.Usage.CompletionTokens))
		}
		if e.FirstChunk > 0 {
			attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(e.FirstChunk.Seconds()))
		}
		if e.Status > 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(e.Status))
		}
		if e.RetryAfter > 0 {
			attrs = append(attrs, AttrRetryAfter.Float64(e.RetryAfter.Seconds()))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
			as.span.SetStatus(codes.Error, errType)
		}
		as.span.SetAttributes(attrs...)
	}
	as.span.End(trace.WithTimestamp(e.Start.Add(e.Latency)))

	if as.op == "" {
		return
	}
	attrs := as.attrs
	if respModel != "" || errType != "" {
		attrs = append(attrs[:len(attrs):len(attrs)], make([]attribute.KeyValue, 0, 2)...)
		if respModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(respModel))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
	}
	// An operation cut short is no completed one: a lost hedge race's time
	// is the race's, a cancelled, closed or abandoned one's how long its
	// caller waited or read, a panicked one's when its code broke — none is
	// the source's (their tokens were spent all the same). A first chunk that came is the source's, whatever
	// ended the attempt after it; a lost hedge's is left out with the rest
	// of it.
	if observe.Measured(e.Outcome) {
		ob.opDuration.Record(ctx, e.Latency.Seconds(), metric.WithAttributes(attrs...))
	}
	if e.FirstChunk > 0 && e.Outcome != observe.OutcomeHedgeLost {
		ob.firstChunk.Record(ctx, e.FirstChunk.Seconds(), metric.WithAttributes(attrs...))
	}
	if e.Usage.PromptTokens > 0 {
		ob.tokenUsage.Record(ctx, int64(e.Usage.PromptTokens), metric.WithAttributes(withTokenType(attrs, semconv.GenAITokenTypeInput)...))
	}
	if e.Usage.CompletionTokens > 0 {
		ob.tokenUsage.Record(ctx, int64(e.Usage.CompletionTokens), metric.WithAttributes(withTokenType(attrs, semconv.GenAITokenTypeOutput)...))
	}
}

func withTokenType(attrs []attribute.KeyValue, t attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(attrs), len(attrs)+1)
	copy(out, attrs)
	return append(out, t)
}

// genaiOperation is the gen_ai.operation.name of a pgw operation: OCR is a
// chat completion with an image.
func genaiOperation(op string) string {
	switch op {
	case observe.OperationChat, observe.OperationOCR:
		return "chat"
	case observe.OperationEmbeddings:
		return "embeddings"
	}
	return op
}

// genaiProvider is the gen_ai.provider.name of a source's provider.
func genaiProvider(p string) string {
	switch p {
	case "", "openai":
		return "openai"
	case "azure":
		return "azure.ai.openai"
	}
	return p
}

// server returns server.address and server.port of a base URL, parsed once
// per URL.
func (ob *Observer) server(baseURL string) []attribute.KeyValue {
	if baseURL == "" {
		return nil
	}
	if v, ok := ob.servers.Load(baseURL); ok {
		return v.([]attribute.KeyValue)
	}
	var attrs []attribute.KeyValue
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			switch u.Scheme {
			case "https":
				port = 443
			case "http":
				port = 80
			}
		}
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	attrs = attrs[:len(attrs):len(attrs)]
	ob.servers.Store(baseURL, attrs)
	return attrs
}

// errorType names why a wait ended without a source: closed when the
// gateway's Close ended the call's ctx (its cause is pgw.ErrClosed; the
// call's result is closed too), canceled or deadline_exceeded when the
// caller's ctx ended it, the error's stable code when it has one (pgw's own
// errors: PGW-CB-OPEN, PGW-EXHAUSTED, …), otherwise its Go type, as the
// conventions allow (goType).
func errorType(ctx context.Context, err error) string {
	var coded interface{ Code() string }
	switch {
	case errors.Is(err, pgw.ErrClosed) || ctx.Err() != nil && errors.Is(context.Cause(ctx), pgw.ErrClosed):
		return observe.ResultClosed
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.As(err, &coded) && coded.Code() != "":
		return coded.Code()
	}
	return goType(err)
}

// goType is the Go type of the innermost error of err's chain that is more
// than text or a wrapper — a gate's "*net.OpError", not the
// "*fmt.wrapError" that adds the scope and source to it — or the
// conventions' fallback "_OTHER" when every error of the chain is only
// text (errors.New, fmt.Errorf).
func goType(err error) string {
	name := ""
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch t := fmt.Sprintf("%T", e); t {
		case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		default:
			name = t
		}
	}
	if name == "" {
		return "_OTHER"
	}
	return name
}
