package observe_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/observe"
)

// recorder keeps every event it gets, as a short string, in order.
type recorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.evs = append(r.evs, s)
	r.mu.Unlock()
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.evs...)
}

func (r *recorder) full() observe.Funcs {
	return observe.Funcs{
		Attempt:      func(e observe.AttemptRecord) { r.add(fmt.Sprintf("attempt %s#%d %s", e.Source, e.Attempt, e.Outcome)) },
		StateChange:  func(e observe.StateChange) { r.add(fmt.Sprintf("state %s %v→%v", e.Source, e.From, e.To)) },
		AttemptStart: func(e observe.AttemptStart) { r.add(fmt.Sprintf("start %s#%d", e.Source, e.Attempt)) },
		Rejection:    func(e observe.Rejection) { r.add("reject " + e.Source + " " + e.Reason) },
		WaitStart:    func(e observe.WaitStart) { r.add("wait " + e.Reason) },
		WaitEnd:      func(e observe.WaitEnd) { r.add("waited " + e.Source) },
		Call:         func(e observe.CallResult) { r.add("call " + e.Result) },
	}
}

// core implements only the two core methods.
type core struct{ r *recorder }

func (c core) ObserveAttempt(e observe.AttemptRecord)   { c.r.add("attempt " + e.Source) }
func (c core) ObserveStateChange(e observe.StateChange) { c.r.add("state " + e.Source) }

// every sends one event of each kind, in a fixed order.
func every(o observe.Full, src string) {
	o.ObserveAttemptStart(observe.AttemptStart{Source: src, Attempt: 1})
	o.ObserveAttempt(observe.AttemptRecord{Source: src, Attempt: 1, Outcome: observe.OutcomeFailure})
	o.ObserveStateChange(observe.StateChange{Source: src, To: 1})
	o.ObserveRejection(observe.Rejection{Source: src, Reason: "circuit_open"})
	o.ObserveWaitStart(observe.WaitStart{Reason: "circuit_open"})
	o.ObserveWaitEnd(observe.WaitEnd{Source: src})
	o.ObserveCall(observe.CallResult{Result: observe.ResultSuccess})
}

var everyWant = []string{
	"start a#1", "attempt a#1 failure", "state a closed→open", "reject a circuit_open",
	"wait circuit_open", "waited a", "call success",
}

func TestAsyncDeliversEveryEventInOrder(t *testing.T) {
	r := &recorder{}
	a := observe.Async(r.full(), 64)
	every(a, "a")
	a.Close()
	assert.Equal(t, everyWant, r.events())
	assert.Zero(t, a.Dropped())
}

func TestAsyncKeepsOrderUnderLoad(t *testing.T) {
	r := &recorder{}
	a := observe.Async(r.full(), 4096)
	for i := range 1000 {
		a.ObserveAttempt(observe.AttemptRecord{Source: "s", Attempt: i})
	}
	a.Close()
	evs := r.events()
	require.Len(t, evs, 1000)
	for i, e := range evs {
		require.Equal(t, fmt.Sprintf("attempt s#%d ", i), e)
	}
}

// A full queue never blocks the caller: the event is dropped and counted.
func TestAsyncDropsOnFullQueueAndCountsIt(t *testing.T) {
	r := &recorder{}
	taken := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	inner := r.full()
	inner.Attempt = func(e observe.AttemptRecord) {
		once.Do(func() { close(taken); <-release }) // hold the goroutine on the first event
		r.add(e.Source)
	}
	a := observe.Async(inner, 2)
	a.ObserveAttempt(observe.AttemptRecord{Source: "first"})
	<-taken // the goroutine holds "first"; the queue is empty
	a.ObserveAttempt(observe.AttemptRecord{Source: "q1"})
	a.ObserveAttempt(observe.AttemptRecord{Source: "q2"})
	for range 3 {
		a.ObserveAttempt(observe.AttemptRecord{Source: "lost"})
	}
	assert.Equal(t, uint64(3), a.Dropped())
	close(release)
	a.Close()
	assert.Equal(t, []string{"first", "q1", "q2"}, r.events())
}

func TestAsyncCloseDrainsThenDropsLateEvents(t *testing.T) {
	r := &recorder{}
	a := observe.Async(r.full(), 16)
	a.ObserveCall(observe.CallResult{Result: "success"})
	a.Close()
	assert.Equal(t, []string{"call success"}, r.events(), "Close delivers what was queued")
	a.ObserveCall(observe.CallResult{Result: "late"})
	a.Close() // a second Close returns at once
	assert.Equal(t, uint64(1), a.Dropped(), "an event after Close is dropped and counted")
	assert.Len(t, r.events(), 1)
}

func TestAsyncRecoversAPanickingObserver(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	r := &recorder{}
	inner := r.full()
	inner.Rejection = func(observe.Rejection) { panic("observer bug, saw Authorization: Bearer sk-echoed-7") }
	a := observe.Async(inner, 16)
	a.ObserveRejection(observe.Rejection{Source: "a"})
	a.ObserveCall(observe.CallResult{Result: "success"})
	a.Close()
	assert.Equal(t, []string{"call success"}, r.events(), "delivery goes on after a panic")
	assert.Equal(t, uint64(1), a.Dropped())
	assert.Contains(t, logs.String(), "observer bug", "the panic is logged")
	assert.NotContains(t, logs.String(), "sk-echoed-7", "a credential header's value in the panic is redacted")
}

func TestAsyncOfACoreObserverDropsWhatItCannotTake(t *testing.T) {
	r := &recorder{}
	a := observe.Async(core{r}, 16)
	every(a, "a")
	a.Close()
	assert.Equal(t, []string{"attempt a", "state a"}, r.events())
	assert.Zero(t, a.Dropped(), "events without a method are not counted as dropped")
}

func TestAsFull(t *testing.T) {
	assert.Nil(t, observe.AsFull(nil))
	f := observe.Funcs{}
	assert.Equal(t, observe.Full(f), observe.AsFull(f), "a Full is returned as is")

	r := &recorder{}
	every(observe.AsFull(core{r}), "a")
	assert.Equal(t, []string{"attempt a", "state a"}, r.events(), "only the core methods reach a core observer")
}

func TestMultiPassesEveryEventToEach(t *testing.T) {
	r1, r2 := &recorder{}, &recorder{}
	m := observe.Multi(r1.full(), nil, core{r2})
	every(m, "a")
	assert.Equal(t, everyWant, r1.events())
	assert.Equal(t, []string{"attempt a", "state a"}, r2.events())
}

func TestNopAndEmptyFuncsIgnoreEverything(t *testing.T) {
	assert.NotPanics(t, func() {
		every(observe.Nop{}, "a")
		every(observe.Funcs{}, "a")
		every(observe.Multi(), "a")
	})
}

func BenchmarkAsyncObserveAttempt(b *testing.B) {
	a := observe.Async(observe.Nop{}, 1<<16)
	defer a.Close()
	e := observe.AttemptRecord{Scope: "CHAT", Source: "openai", Attempt: 1, Outcome: observe.OutcomeSuccess}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.ObserveAttempt(e)
		}
	})
}

// Measured tells the attempts whose time is their source's from those cut
// short before it answered.
func TestMeasuredLeavesOutTheAttemptsCutShort(t *testing.T) {
	for _, o := range []string{observe.OutcomeSuccess, observe.OutcomeFailure, observe.OutcomeThrottle,
		observe.OutcomeFatal, observe.OutcomeCallerError} {
		if !observe.Measured(o) {
			t.Errorf("Measured(%q) = false, want true", o)
		}
	}
	for _, o := range []string{observe.OutcomeCanceled, observe.OutcomeClosed, observe.OutcomeAbandoned,
		observe.OutcomeHedgeLost, observe.OutcomePanic} {
		if observe.Measured(o) {
			t.Errorf("Measured(%q) = true, want false", o)
		}
	}
}
