// Package prom exposes what pgw does as Prometheus metrics: a Collector that
// is both an observe.Observer (hand it to the gateway) and a
// prometheus.Collector (register it). It lives in its own package so that
// pgw's core does not depend on the Prometheus client.
//
//	c := prom.New()
//	prometheus.MustRegister(c)
//	obs := c.Async(0) // never slows a call; drops counted in pgw_observer_dropped_total
//	defer obs.Close()
//	… retry.Config{Observer: obs} / the gateway's observer option …
//
// Metrics (every name starts with pgw_):
//
//	pgw_attempts_total{scope,source,outcome}          counter: finished attempts by outcome
//	pgw_gate_rejections_total{scope,source,reason}    counter: sources skipped by admission, by reason
//	pgw_calls_total{scope,result}                     counter: finished calls by result
//	pgw_breaker_state{scope,source}                   gauge: 0 closed, 1 open, 2 half_open
//	pgw_breaker_forced{scope,source}                  gauge: operator override, 0 none, 1 open, 2 closed
//	pgw_in_flight{scope,source}                       gauge: attempts running
//	pgw_attempt_duration_seconds{scope,source}        histogram: attempt latency (attempts cut short left out)
//	pgw_wait_duration_seconds{scope}                  histogram: time calls waited for a runnable source
//	pgw_hedges_total{scope,source,event}              counter: hedging events (observe.Hedge…); source: the hedge's, or the hedged attempt's for a skipped one
//	pgw_observer_dropped_total                        counter: events an Async queue dropped
//	pgw_advertised_remaining{scope,source,window}     gauge: what the upstream last said is left (window: requests, tokens)
//	pgw_advertised_limit{scope,source,window}         gauge: the window's size the upstream last advertised
//	pgw_advertised_reset_seconds{scope,source,window} gauge: time to the window's reset, as of the last answer
//
// The breaker gauges show the state this process last saw: a source appears
// with its first attempt (as closed) or its first state change.
//
// pgw_attempt_duration_seconds leaves out an attempt cut short before its
// source answered (observe.Measured): one that lost a hedge race
// (observe.OutcomeHedgeLost: pgw cut it short when another attempt
// delivered, so its time says how long the race took), one its caller's
// context or the gateway's Close ended (canceled, closed: its time says how
// long the caller waited; canceled too when another attempt's caller error
// ended its hedge race), and a stream its caller closed before its end
// (abandoned: how long the caller read); nor the time of an attempt that
// panicked (panic: when the code it ran broke). pgw_attempts_total counts
// each by its outcome.
//
// There is no call duration histogram: a call's time is its waits,
// backoffs and attempts together, which pgw_wait_duration_seconds and
// pgw_attempt_duration_seconds show apart, and pgw_calls_total counts calls
// by result. A wait is measured whatever ended it, a cancellation
// included: its time is how long the call did wait.
package prom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgw-go/pgw/observe"
)

// Default histogram buckets, in seconds. Attempts run from milliseconds
// (embeddings) to minutes (long streamed answers); waits from a poll interval
// to the stall window.
var (
	DefaultAttemptBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}
	DefaultWaitBuckets    = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600}
)

// Option configures a Collector.
type Option func(*options)

type options struct {
	attemptBuckets []float64
	waitBuckets    []float64
	constLabels    prometheus.Labels
}

// WithAttemptBuckets sets the buckets of pgw_attempt_duration_seconds.
func WithAttemptBuckets(b []float64) Option { return func(o *options) { o.attemptBuckets = b } }

// WithWaitBuckets sets the buckets of pgw_wait_duration_seconds.
func WithWaitBuckets(b []float64) Option { return func(o *options) { o.waitBuckets = b } }

// WithConstLabels adds labels to every metric (e.g. the service's name).
func WithConstLabels(l prometheus.Labels) Option { return func(o *options) { o.constLabels = l } }

// Dropper is what counts dropped events: *observe.AsyncObserver.
type Dropper interface {
	// Dropped returns how many events were dropped so far.
	Dropped() uint64
}

// Collector turns observe events into Prometheus metrics. It is an
// observe.Full and a prometheus.Collector, safe for concurrent use; every
// event costs a label lookup and an atomic update, so it may be called
// synchronously, though Async is the safer default.
type Collector struct {
	attempts   *prometheus.CounterVec
	rejections *prometheus.CounterVec
	calls      *prometheus.CounterVec
	state      *prometheus.GaugeVec
	forced     *prometheus.GaugeVec
	inFlight   *prometheus.GaugeVec
	attemptDur *prometheus.HistogramVec
	waitDur    *prometheus.HistogramVec
	dropped    prometheus.CounterFunc
	hedges     *prometheus.CounterVec
	adv        advertisedGauges

	droppers atomic.Pointer[[]Dropper]
	known    sync.Map // scope+"\x00"+source → struct{}: breaker gauges set
}

var (
	_ observe.Full         = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector; register it with a prometheus.Registerer.
func New(opts ...Option) *Collector {
	o := options{attemptBuckets: DefaultAttemptBuckets, waitBuckets: DefaultWaitBuckets}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	c := &Collector{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgw_attempts_total", Help: "Finished attempts of governed calls, by outcome.", ConstLabels: o.constLabels,
		}, []string{"scope", "source", "outcome"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgw_gate_rejections_total", Help: "Sources an admission round skipped, by reason (cooldown, circuit_open, rate_limited, retry_after, adaptive_paced).", ConstLabels: o.constLabels,
		}, []string{"scope", "source", "reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgw_calls_total", Help: "Finished governed calls, by result.", ConstLabels: o.constLabels,
		}, []string{"scope", "result"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_breaker_state", Help: "Breaker state last seen: 0 closed, 1 open, 2 half_open.", ConstLabels: o.constLabels,
		}, []string{"scope", "source"}),
		forced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_breaker_forced", Help: "Operator override last seen: 0 none, 1 forced open, 2 forced closed.", ConstLabels: o.constLabels,
		}, []string{"scope", "source"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_in_flight", Help: "Attempts running.", ConstLabels: o.constLabels,
		}, []string{"scope", "source"}),
		attemptDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pgw_attempt_duration_seconds", Help: "Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.", Buckets: o.attemptBuckets, ConstLabels: o.constLabels,
		}, []string{"scope", "source"}),
		waitDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pgw_wait_duration_seconds", Help: "Time calls waited for a runnable source.", Buckets: o.waitBuckets, ConstLabels: o.constLabels,
		}, []string{"scope"}),
	}
	c.dropped = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "pgw_observer_dropped_total", Help: "Observer events dropped by a full Async queue (or after Close).", ConstLabels: o.constLabels,
	}, c.droppedTotal)
	c.hedges = newHedges(o.constLabels)
	c.adv = newAdvertisedGauges(o.constLabels)
	return c
}

// CountDropped adds d's Dropped to pgw_observer_dropped_total.
func (c *Collector) CountDropped(d Dropper) {
	for {
		old := c.droppers.Load()
		var next []Dropper
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, d)
		if c.droppers.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Async returns c behind an observe.Async queue of buffer events (≤ 0: the
// default) whose drops pgw_observer_dropped_total counts. What a full queue
// drops leaves the gauges right: pgw_in_flight never counts an attempt whose
// start or end alone was lost, and pgw_breaker_state and the advertised
// gauges get each source's latest event. Close it when done.
func (c *Collector) Async(buffer int) *observe.AsyncObserver {
	a := observe.Async(c, buffer)
	c.CountDropped(a)
	return a
}

func (c *Collector) droppedTotal() float64 {
	var n uint64
	if ds := c.droppers.Load(); ds != nil {
		for _, d := range *ds {
			n += d.Dropped()
		}
	}
	return float64(n)
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics() {
		m.Describe(ch)
	}
}

// Collect sends every metric's current values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics() {
		m.Collect(ch)
	}
}

func (c *Collector) metrics() []prometheus.Collector {
	return []prometheus.Collector{c.attempts, c.rejections, c.calls, c.state, c.forced, c.inFlight, c.attemptDur, c.waitDur, c.dropped, c.hedges,
		c.adv.remaining, c.adv.limit, c.adv.reset}
}

// see makes a source's breaker gauges exist (closed, no override) from its
// first event on, so dashboards list every source that ran.
func (c *Collector) see(scope, source string) {
	if _, ok := c.known.Load(scope + "\x00" + source); ok {
		return
	}
	if _, loaded := c.known.LoadOrStore(scope+"\x00"+source, struct{}{}); !loaded {
		c.state.WithLabelValues(scope, source).Add(0)
		c.forced.WithLabelValues(scope, source).Add(0)
	}
}

// ObserveAttemptStart counts the attempt in flight.
func (c *Collector) ObserveAttemptStart(e observe.AttemptStart) {
	c.see(e.Scope, e.Source)
	c.inFlight.WithLabelValues(e.Scope, e.Source).Inc()
}

// ObserveAttempt counts the attempt by outcome, records its latency (not
// that of an attempt cut short before its source answered — cancelled,
// closed, abandoned, or that lost a hedge race — nor of one that panicked:
// observe.Measured) and takes it out of flight.
func (c *Collector) ObserveAttempt(e observe.AttemptRecord) {
	c.attempts.WithLabelValues(e.Scope, e.Source, e.Outcome).Inc()
	if observe.Measured(e.Outcome) {
		c.attemptDur.WithLabelValues(e.Scope, e.Source).Observe(seconds(e.Latency))
	}
	c.inFlight.WithLabelValues(e.Scope, e.Source).Dec()
}

// ObserveStateChange sets the breaker gauges.
func (c *Collector) ObserveStateChange(e observe.StateChange) {
	c.known.Store(e.Scope+"\x00"+e.Source, struct{}{})
	c.state.WithLabelValues(e.Scope, e.Source).Set(float64(e.To))
	c.forced.WithLabelValues(e.Scope, e.Source).Set(float64(e.Forced))
}

// ObserveRejection counts the rejection by reason.
func (c *Collector) ObserveRejection(e observe.Rejection) {
	c.rejections.WithLabelValues(e.Scope, e.Source, e.Reason).Inc()
}

// ObserveWaitStart does nothing: a wait is measured when it ends.
func (c *Collector) ObserveWaitStart(observe.WaitStart) {}

// ObserveWaitEnd records how long the call waited.
func (c *Collector) ObserveWaitEnd(e observe.WaitEnd) {
	c.waitDur.WithLabelValues(e.Scope).Observe(seconds(e.Waited))
}

// ObserveCall counts the call by result.
func (c *Collector) ObserveCall(e observe.CallResult) {
	c.calls.WithLabelValues(e.Scope, e.Result).Inc()
}

func seconds(d time.Duration) float64 { return d.Seconds() }
