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
// A call hands an event over without waiting: when the queue is full the
// event is dropped and counted (Dropped). One goroutine delivers the events
// in the order they were queued, so the events of one call keep their order.
// Close drains the queue and stops the goroutine; events that arrive after
// Close are dropped and counted.
type AsyncObserver struct {
	o       Full
	ch      chan any
	done    chan struct{}
	mu      sync.RWMutex // guards closed against a send on a closed channel
	closed  bool
	dropped atomic.Uint64
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
	a := &AsyncObserver{o: f, ch: make(chan any, buffer), done: make(chan struct{})}
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
// full, they came after Close, or the observer panicked on them.
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

func (a *AsyncObserver) send(e any) {
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		a.dropped.Add(1)
		return
	}
	select {
	case a.ch <- e:
	default:
		a.dropped.Add(1)
	}
	a.mu.RUnlock()
}

func (a *AsyncObserver) run() {
	defer close(a.done)
	for e := range a.ch {
		a.deliver(e)
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
