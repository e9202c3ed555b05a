package otel

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/pgw-go/pgw/observe"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/pgw-go/pgw/observe/otel"

// SemConvVersion is the version of the OpenTelemetry semantic conventions
// whose GenAI attributes and metrics the observer emits; SchemaURL is its
// schema, set on the tracer and the meter.
const (
	SemConvVersion = "1.41.0"
	SchemaURL      = "https://opentelemetry.io/schemas/1.41.0"
)

// Histogram bucket boundaries: the GenAI conventions' advice for durations
// (seconds) and token counts, and observe/prom's for pgw's own histograms.
var (
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	TokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	AttemptBuckets  = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}
	WaitBuckets     = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600}
)

// Option configures the observer New returns.
type Option func(*options)

type options struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	prop propagation.TextMapPropagator
}

// WithTracerProvider makes the observer start its spans with tp instead of
// the global TracerProvider (otel.GetTracerProvider). A nil tp means the
// global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tp = tp }
}

// WithMeterProvider makes the observer record its metrics with mp instead
// of the global MeterProvider (otel.GetMeterProvider). A nil mp means the
// global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.mp = mp }
}

// WithPropagator sets how an attempt's trace context is written into its
// outgoing request's headers. The default is W3C Trace Context
// (traceparent, tracestate) whatever the global propagator is, so an
// upstream sees the caller's trace without further setup; pass
// otel.GetTextMapPropagator() to follow the global one instead.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) { o.prop = p }
}

// Observer reports pgw's calls as OpenTelemetry spans and metrics. Build it
// with New and hand it to the gateway (pgw.WithObserver). It is safe for
// concurrent use and quick enough to be called synchronously: spans are
// handed to the TracerProvider's span processors (use a batching one in
// production). Do not wrap it in observe.Async: a queue loses the calls'
// contexts, so it would keep the metrics and lose the spans.
type Observer struct {
	tracer     trace.Tracer
	globalTP   bool // follow otel.GetTracerProvider: tracing is off while it is unset
	tracingOff bool // an explicit no-op TracerProvider
	prop       propagation.TextMapPropagator

	// GenAI client metrics.
	opDuration metric.Float64Histogram
	tokenUsage metric.Int64Histogram
	firstChunk metric.Float64Histogram

	// pgw's own, named as observe/prom names them.
	attempts   metric.Int64Counter
	rejections metric.Int64Counter
	calls      metric.Int64Counter
	state      metric.Int64Gauge
	forced     metric.Int64Gauge
	inFlight   metric.Int64UpDownCounter
	attemptDur metric.Float64Histogram
	waitDur    metric.Float64Histogram
	hedges     metric.Int64Counter
	adv        advertisedGauges

	servers sync.Map // base URL → serverAttrs
	sets    attrSets // the attribute sets of pgw's own metrics
	known   sync.Map // setKey{scope, source} → *knownSource: breaker gauges set
}

// knownSource is whether a source's breaker gauges were set, and the lock
// that keeps a first sight's "closed" from overwriting a state change
// recorded at the same time.
type knownSource struct {
	mu  sync.Mutex
	set atomic.Bool
}

var (
	_ observe.Full            = (*Observer)(nil)
	_ observe.ContextObserver = (*Observer)(nil)
	_ observe.EnabledObserver = (*Observer)(nil)
)

// New returns an observer that reports to the global TracerProvider and
// MeterProvider, or to those the options name.
//
// Spans: one "pgw.call" span (kind INTERNAL) per governed call, a child of
// the span in the caller's ctx, and under it one CLIENT span per attempt on
// an upstream, named "{gen_ai.operation.name} {gen_ai.request.model}". A
// wait for a runnable source is a "pgw.wait" event of the call's span. The
// attempt's ctx carries its span to the transport, which writes the trace
// context into the request's headers.
//
// Metrics: gen_ai.client.operation.duration, gen_ai.client.token.usage and
// gen_ai.client.operation.time_to_first_chunk as the GenAI conventions
// define them, and pgw's own under the names observe/prom gives them.
//
// No prompt or completion text is recorded: the observer never sees it.
func New(opts ...Option) observe.Observer {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	ob := &Observer{prop: o.prop}
	if ob.prop == nil {
		ob.prop = propagation.TraceContext{}
	}
	tp := o.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
		ob.globalTP = true
	} else {
		ob.tracingOff = isNoopTracing(tp)
	}
	mp := o.mp
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	ob.tracer = tp.Tracer(ScopeName, trace.WithSchemaURL(SchemaURL))
	m := mp.Meter(ScopeName, metric.WithSchemaURL(SchemaURL))
	ob.instruments(m)
	return ob
}

// instruments creates the metric instruments. A meter only fails to
// create an instrument for a bad name or bucket list, which these are not;
// it then still returns a usable (no-op) instrument, so the error is
// dropped.
func (ob *Observer) instruments(m metric.Meter) {
	ob.opDuration, _ = m.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithDescription("GenAI operation duration."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	ob.tokenUsage, _ = m.Int64Histogram("gen_ai.client.token.usage",
		metric.WithDescription("Number of input and output tokens used."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(TokenBuckets...))
	ob.firstChunk, _ = m.Float64Histogram("gen_ai.client.operation.time_to_first_chunk",
		metric.WithDescription("Time to receive the first chunk of a streamed answer."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))

	ob.attempts, _ = m.Int64Counter("pgw_attempts_total",
		metric.WithDescription("Finished attempts of governed calls, by outcome."))
	ob.rejections, _ = m.Int64Counter("pgw_gate_rejections_total",
		metric.WithDescription("Sources an admission round skipped, by reason (cooldown, circuit_open, rate_limited, retry_after, adaptive_paced)."))
	ob.calls, _ = m.Int64Counter("pgw_calls_total",
		metric.WithDescription("Finished governed calls, by result."))
	ob.state, _ = m.Int64Gauge("pgw_breaker_state",
		metric.WithDescription("Breaker state last seen: 0 closed, 1 open, 2 half_open."))
	ob.forced, _ = m.Int64Gauge("pgw_breaker_forced",
		metric.WithDescription("Operator override last seen: 0 none, 1 forced open, 2 forced closed."))
	ob.inFlight, _ = m.Int64UpDownCounter("pgw_in_flight",
		metric.WithDescription("Attempts running."))
	ob.attemptDur, _ = m.Float64Histogram("pgw_attempt_duration_seconds",
		metric.WithDescription("Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(AttemptBuckets...))
	ob.waitDur, _ = m.Float64Histogram("pgw_wait_duration_seconds",
		metric.WithDescription("Time calls waited for a runnable source."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(WaitBuckets...))
	ob.adv.instruments(m)
	ob.hedges, _ = m.Int64Counter("pgw_hedges_total",
		metric.WithDescription("Hedging events by event: fired, won, wasted, canceled (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge)."))
}

// Enabled reports whether the observer records anything now: false while
// the TracerProvider is a no-op (the global one before it is set, or an
// explicit no-op) and no metric reader takes pgw's metrics. pgw asks once
// per call and builds none of the call's reports while it is false, so an
// observer with nothing configured costs a call next to nothing.
func (ob *Observer) Enabled() bool {
	return ob.tracing() || ob.calls.Enabled(context.Background()) || ob.opDuration.Enabled(context.Background())
}

// tracing reports whether spans would be recorded or propagated.
func (ob *Observer) tracing() bool {
	if ob.globalTP {
		return !isNoopTracing(otel.GetTracerProvider())
	}
	return !ob.tracingOff
}

// globalDelegate is the type of the global TracerProvider before
// otel.SetTracerProvider is called: it starts only non-recording spans
// until then.
var globalDelegate = reflect.TypeOf(otel.GetTracerProvider())

// isNoopTracing reports whether tp can only make non-recording spans that
// carry no new trace context.
func isNoopTracing(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true
	}
	t := reflect.TypeOf(tp)
	return t == globalDelegate && t.String() == "*global.tracerProvider"
}

// ObserveAttemptStart counts the attempt in flight, and makes the source's
// breaker gauges exist (closed, no override) from its first attempt on, as
// observe/prom does, so that dashboards list every source that ran.
func (ob *Observer) ObserveAttemptStart(e observe.AttemptStart) {
	ss := ob.sets.get(e.Scope, e.Source, "", "")
	ob.see(e.Scope, e.Source, ss)
	ob.inFlight.Add(context.Background(), 1, ss)
}

// source returns the record of whether scope/source's breaker gauges were
// set.
func (ob *Observer) source(scope, source string) *knownSource {
	k := setKey{scope: scope, source: source}
	if v, ok := ob.known.Load(k); ok {
		return v.(*knownSource)
	}
	v, _ := ob.known.LoadOrStore(k, &knownSource{})
	return v.(*knownSource)
}

// see sets the source's breaker gauges to closed and no override unless a
// state change set them already.
func (ob *Observer) see(scope, source string, ss metric.MeasurementOption) {
	ks := ob.source(scope, source)
	if ks.set.Load() {
		return
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.set.Load() {
		return
	}
	ctx := context.Background()
	ob.state.Record(ctx, 0, ss)
	ob.forced.Record(ctx, 0, ss)
	ks.set.Store(true)
}

// ObserveAttempt counts the attempt by outcome, records its latency (not
// that of an attempt cut short before its source answered — cancelled,
// closed, abandoned, or that lost a hedge race — nor of one that panicked:
// observe.Measured — as observe/prom leaves it out) and takes it out of
// flight.
func (ob *Observer) ObserveAttempt(e observe.AttemptRecord) {
	ctx := context.Background()
	ss := ob.sets.get(e.Scope, e.Source, "", "")
	ob.attempts.Add(ctx, 1, ob.sets.get(e.Scope, e.Source, "outcome", e.Outcome))
	if observe.Measured(e.Outcome) {
		ob.attemptDur.Record(ctx, e.Latency.Seconds(), ss)
	}
	ob.inFlight.Add(ctx, -1, ss)
}

// ObserveStateChange sets the breaker gauges.
func (ob *Observer) ObserveStateChange(e observe.StateChange) {
	ctx := context.Background()
	ss := ob.sets.get(e.Scope, e.Source, "", "")
	ks := ob.source(e.Scope, e.Source)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ob.state.Record(ctx, int64(e.To), ss)
	ob.forced.Record(ctx, int64(e.Forced), ss)
	ks.set.Store(true)
}

// ObserveRejection counts the rejection by reason.
func (ob *Observer) ObserveRejection(e observe.Rejection) {
	ob.rejections.Add(context.Background(), 1, ob.sets.get(e.Scope, e.Source, "reason", e.Reason))
}

// ObserveWaitStart does nothing: a wait is reported when it ends.
func (ob *Observer) ObserveWaitStart(observe.WaitStart) {}

// ObserveWaitEnd records how long the call waited.
func (ob *Observer) ObserveWaitEnd(e observe.WaitEnd) {
	ob.waitDur.Record(context.Background(), e.Waited.Seconds(), ob.sets.get(e.Scope, "", "", ""))
}

// ObserveCall counts the call by result.
func (ob *Observer) ObserveCall(e observe.CallResult) {
	ob.calls.Add(context.Background(), 1, ob.sets.get(e.Scope, "", "result", e.Result))
}

// attrSets keeps the attribute set of each label combination of pgw's own
// metrics, built once: scope, source when not empty, and one more label.
// The combinations are few (scopes × sources × outcomes), so the map only
// grows to a small size.
type attrSets struct {
	mu   sync.RWMutex
	sets map[setKey]metric.MeasurementOption
}

type setKey struct{ scope, source, key, value string }

func (a *attrSets) get(scope, source, key, value string) metric.MeasurementOption {
	k := setKey{scope, source, key, value}
	a.mu.RLock()
	o, ok := a.sets[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	kvs := make([]attribute.KeyValue, 0, 3)
	kvs = append(kvs, attribute.String("scope", scope))
	if source != "" {
		kvs = append(kvs, attribute.String("source", source))
	}
	if key != "" {
		kvs = append(kvs, attribute.String(key, value))
	}
	o = metric.WithAttributeSet(attribute.NewSet(kvs...))
	a.mu.Lock()
	if a.sets == nil {
		a.sets = make(map[setKey]metric.MeasurementOption)
	}
	a.sets[k] = o
	a.mu.Unlock()
	return o
}
