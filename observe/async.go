package observe

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/pgw-go/pgw/provider"
)

// DefaultBuffer is the queue length of Async when it is given none.
const DefaultBuffer = 1024

// AsyncObserver delivers events to another observer from one goroutine of
// its own, through a bounded queue, so that an observer never slows the calls
// that report to it. Build it with Async. It is safe for concurrent use.
//
// A call hands an event over without waiting. One goroutine delivers the
// events in the order they were handed over, so the events of one call keep
// their order. When the queue is full an event is dropped and counted
// (Dropped) — unless its loss would leave a gauge wrong for good:
//
//   - the end of an attempt (AttemptRecord) or of a wait (WaitEnd) whose
//     start went into the queue, and
//   - each source's latest StateChange and Advertised (a later one replaces
//     an earlier one still waiting, which counts as dropped),
//
// are kept aside and delivered, in order, as soon as the queue has drained;
// while any are kept aside, the events that follow them are kept aside too
// when they are of these kinds, and dropped otherwise. For every attempt
// start (AttemptStart) or wait start (WaitStart) that is dropped, the next
// end of the same source's attempt (the same scope's wait) is dropped with
// it. So an in-flight gauge fed by the starts and ends never counts an
// attempt it was not told of, nor keeps one that ended, and a state gauge
// ends on the breaker's latest state, however many events the queue lost.
// What is kept aside is bounded by the attempts and waits in flight when the
// queue filled, plus two events per source.
//
// Close drains the queue and stops the goroutine; events that arrive after
// Close are dropped and counted.
type AsyncObserver struct {
	o    Full
	ch   chan any
	done chan struct{}

	mu      sync.Mutex // guards what follows, and closed against a send on a closed channel
	closed  bool
	kept    []any            // events kept aside while the queue was full, in order; nil: replaced
	latest  map[asyncKey]int // index in kept of each source's latest StateChange or Advertised
	open    map[asyncKey]int // starts queued whose end has not come yet
	skipped map[asyncKey]int // starts dropped whose end has not come yet
	keeping atomic.Bool      // len(kept) > 0, for run to read without mu

	dropped atomic.Uint64
}

// asyncKey names what a start and its end, or a source's latest state,
// belong to.
type asyncKey struct {
	kind          asyncKind
	scope, source string
}

type asyncKind uint8

const (
	kindOther      asyncKind = iota // dropped when the queue is full
	kindAttempt                     // AttemptStart, AttemptRecord
	kindWait                        // WaitStart, WaitEnd (source empty)
	kindState                       // StateChange: the latest is kept
	kindAdvertised                  // Advertised: the latest is kept
)

// keyOf returns e's key and whether e starts (AttemptStart, WaitStart) or
// ends (AttemptRecord, WaitEnd) a pair.
func keyOf(e any) (k asyncKey, start, end bool) {
	switch e := e.(type) {
	case AttemptStart:
		return asyncKey{kindAttempt, e.Scope, e.Source}, true, false
	case AttemptRecord:
		return asyncKey{kindAttempt, e.Scope, e.Source}, false, true
	case WaitStart:
		return asyncKey{kindWait, e.Scope, ""}, true, false
	case WaitEnd:
		return asyncKey{kindWait, e.Scope, ""}, false, true
	case StateChange:
		return asyncKey{kindState, e.Scope, e.Source}, false, false
	case Advertised:
		return asyncKey{kindAdvertised, e.Scope, e.Source}, false, false
	}
	return asyncKey{}, false, false
}

var (
	_ Full            = (*AsyncObserver)(nil)
	_ EnabledObserver = (*AsyncObserver)(nil)
)

// Async starts delivering to o through a queue of buffer events (buffer ≤ 0:
// DefaultBuffer). o may implement any of the optional interfaces; events it
// has no method for are dropped without being counted. A panic in o is
// recovered, logged (slog.Default, any credential header's value in its
// text redacted) and counted as a dropped event, and delivery goes on. Call Close when done, or the goroutine stays.
//
// A ContextObserver's methods are not among the events Async delivers:
// StartCall and StartAttempt return the ctx the call goes on under, which
// no queue can wait for. Give such an observer to Multi beside the Async
// (Multi(tracer, Async(counters, 0))), not inside it.
func Async(o Observer, buffer int) *AsyncObserver {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	f := AsFull(o)
	if f == nil {
		f = Nop{}
	}
	a := &AsyncObserver{
		o: f, ch: make(chan any, buffer), done: make(chan struct{}),
		open: make(map[asyncKey]int), skipped: make(map[asyncKey]int), latest: make(map[asyncKey]int),
	}
	go a.run()
	return a
}

// Enabled asks the observer Async delivers to, so that wrapping never turns
// an observer that says it is off into one that is on: a call that finds it
// off queues none of its events. Unlike the events, it is called on the
// goroutine of the call that asks, and must be as safe for concurrent use
// and as quick as an Observer's methods; a panic in it is not recovered.
func (a *AsyncObserver) Enabled() bool { return Enabled(a.o) }

// Dropped is the number of events that were not delivered: the queue was
// full (or the start of an attempt or wait was, for its end), a later state
// of the same source replaced them while they were kept aside, they came
// after Close, or the observer panicked on them.
func (a *AsyncObserver) Dropped() uint64 { return a.dropped.Load() }

// Close stops taking events, delivers those already queued and stops the
// goroutine; it returns when the last one is delivered. Later calls return at
// once.
func (a *AsyncObserver) Close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
}

// ObserveAttempt queues e.
func (a *AsyncObserver) ObserveAttempt(e AttemptRecord) { a.send(e) }

// ObserveStateChange queues e.
func (a *AsyncObserver) ObserveStateChange(e StateChange) { a.send(e) }

// ObserveAttemptStart queues e.
func (a *AsyncObserver) ObserveAttemptStart(e AttemptStart) { a.send(e) }

// ObserveRejection queues e.
func (a *AsyncObserver) ObserveRejection(e Rejection) { a.send(e) }

// ObserveWaitStart queues e.
func (a *AsyncObserver) ObserveWaitStart(e WaitStart) { a.send(e) }

// ObserveWaitEnd queues e.
func (a *AsyncObserver) ObserveWaitEnd(e WaitEnd) { a.send(e) }

// ObserveCall queues e.
func (a *AsyncObserver) ObserveCall(e CallResult) { a.send(e) }

// send hands e over: into the queue, kept aside, or dropped (see
// AsyncObserver).
func (a *AsyncObserver) send(e any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		a.dropped.Add(1)
		return
	}
	k, start, end := keyOf(e)
	switch {
	case start:
		if a.queue(e) {
			a.open[k]++
		} else {
			a.skipped[k]++
			a.dropped.Add(1)
		}
	case end && a.open[k] > 0:
		take(a.open, k)
		if !a.queue(e) {
			a.keep(e)
		}
	case end && a.skipped[k] > 0:
		take(a.skipped, k) // its start was dropped: so is it
		a.dropped.Add(1)
	case k.kind == kindState || k.kind == kindAdvertised:
		if !a.queue(e) {
			if i, ok := a.latest[k]; ok {
				a.kept[i] = nil
				a.dropped.Add(1)
			}
			a.latest[k] = len(a.kept)
			a.keep(e)
		}
	default: // an end with no start handed over, or an event of no pair
		if !a.queue(e) {
			a.dropped.Add(1)
		}
	}
}

// queue puts e in the queue unless events are kept aside (e must come after
// them) or the queue is full. Under a.mu.
func (a *AsyncObserver) queue(e any) bool {
	if len(a.kept) > 0 {
		return false
	}
	select {
	case a.ch <- e:
		return true
	default:
		return false
	}
}

// keep puts e aside, after the queue. Under a.mu.
func (a *AsyncObserver) keep(e any) {
	a.kept = append(a.kept, e)
	a.keeping.Store(true)
}

// take counts one end against k's starts in m, forgetting k at zero.
func take(m map[asyncKey]int, k asyncKey) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// run delivers the queue and, whenever it has drained, what was kept aside.
// Nothing enters the queue while events are kept aside, so a queue that
// filled always drains.
func (a *AsyncObserver) run() {
	defer close(a.done)
	for e := range a.ch {
		a.deliver(e)
		if len(a.ch) == 0 && a.keeping.Load() {
			a.deliverKept()
		}
	}
	a.deliverKept()
}

// deliverKept delivers the events kept aside, in order.
func (a *AsyncObserver) deliverKept() {
	a.mu.Lock()
	kept := a.kept
	a.kept = nil
	clear(a.latest)
	a.keeping.Store(false)
	a.mu.Unlock()
	for _, e := range kept {
		if e != nil {
			a.deliver(e)
		}
	}
}

func (a *AsyncObserver) deliver(e any) {
	defer func() {
		if r := recover(); r != nil {
			a.dropped.Add(1)
			slog.Default().Warn("pgw: observer panicked; event dropped",
				"event", fmt.Sprintf("%T", e), "panic", provider.RedactText(fmt.Sprint(r), nil))
		}
	}()
	switch e := e.(type) {
	case AttemptRecord:
		a.o.ObserveAttempt(e)
	case StateChange:
		a.o.ObserveStateChange(e)
	case AttemptStart:
		a.o.ObserveAttemptStart(e)
	case Rejection:
		a.o.ObserveRejection(e)
	case WaitStart:
		a.o.ObserveWaitStart(e)
	case WaitEnd:
		a.o.ObserveWaitEnd(e)
	case CallResult:
		a.o.ObserveCall(e)
	case Hedge:
		deliverHedge(a.o, e)
	case Advertised:
		if ao, ok := a.o.(AdvertisedObserver); ok {
			ao.ObserveAdvertised(e)
		}
	}
}
