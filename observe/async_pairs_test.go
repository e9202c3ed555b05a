package observe_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
)

// held is an observer whose goroutine can be held on its first event, so
// that a test fills the queue behind it.
type held struct {
	*recorder
	taken, release chan struct{}
	once           sync.Once
}

func newHeld() *held {
	return &held{recorder: &recorder{}, taken: make(chan struct{}), release: make(chan struct{})}
}

func (h *held) full() observe.Funcs {
	f := h.recorder.full()
	call := f.Call
	f.Call = func(e observe.CallResult) {
		if e.Result == "hold" {
			h.once.Do(func() { close(h.taken); <-h.release })
		}
		call(e)
	}
	return f
}

// hold sends the event that holds a's goroutine and waits until it does:
// the queue is then empty and nothing leaves it until h.release closes.
func (h *held) hold(a *observe.AsyncObserver) {
	a.ObserveCall(observe.CallResult{Result: "hold"})
	<-h.taken
}

// overflow holds a's goroutine (a delivering to h), runs send, lets the
// goroutine go and closes a: what h got is then all a delivered.
func (h *held) overflow(a *observe.AsyncObserver, send func()) {
	h.hold(a)
	send()
	close(h.release)
	a.Close()
}

// The end of an attempt whose start was queued is never lost to a full
// queue: it waits aside and comes after the queue, in order. An attempt
// whose start was dropped loses its end too. Events of no pair are
// dropped, as before.
func TestAsyncKeepsTheEndOfAnAttemptWhoseStartWasQueued(t *testing.T) {
	h := newHeld()
	a := observe.Async(h.full(), 2)
	h.hold(a)
	a.ObserveAttemptStart(observe.AttemptStart{Source: "a", Attempt: 1})             // queued
	a.ObserveRejection(observe.Rejection{Source: "b", Reason: "rate_limited"})       // queued: the queue is full
	a.ObserveAttempt(observe.AttemptRecord{Source: "a", Attempt: 1, Outcome: "ok"})  // kept aside
	a.ObserveRejection(observe.Rejection{Source: "b", Reason: "circuit_open"})       // dropped
	a.ObserveAttemptStart(observe.AttemptStart{Source: "a", Attempt: 2})             // dropped
	a.ObserveAttempt(observe.AttemptRecord{Source: "a", Attempt: 2, Outcome: "bad"}) // dropped with its start
	a.ObserveWaitStart(observe.WaitStart{Scope: "S", Reason: "quota_full"})          // dropped
	a.ObserveWaitEnd(observe.WaitEnd{Scope: "S", Source: "x"})                       // dropped with its start
	assert.Equal(t, uint64(5), a.Dropped())
	close(h.release)
	a.Close()
	assert.Equal(t, []string{
		"call hold", "start a#1", "reject b rate_limited", "attempt a#1 ok",
	}, h.events())
	assert.Equal(t, uint64(5), a.Dropped())
}

// A wait's end is kept like an attempt's; while anything is kept aside,
// events of no pair are dropped even if the queue has room again, so that
// nothing overtakes what was kept.
func TestAsyncKeepsTheEndOfAQueuedWaitAndItsOrder(t *testing.T) {
	h := newHeld()
	a := observe.Async(h.full(), 1)
	h.overflow(a, func() {
		a.ObserveWaitStart(observe.WaitStart{Scope: "S", Reason: "quota_full"}) // queued: full
		a.ObserveWaitEnd(observe.WaitEnd{Scope: "S", Source: "a"})              // kept
		a.ObserveCall(observe.CallResult{Result: "success"})                    // dropped
	})
	assert.Equal(t, []string{"call hold", "wait quota_full", "waited a"}, h.events())
	assert.Equal(t, uint64(1), a.Dropped())
}

// Each source's latest breaker state survives a full queue; a later state of
// the same source replaces an earlier one still waiting aside (counted as
// dropped), and the order among what is kept holds.
func TestAsyncKeepsEachSourcesLatestState(t *testing.T) {
	h := newHeld()
	a := observe.Async(h.full(), 1)
	h.overflow(a, func() {
		a.ObserveRejection(observe.Rejection{Source: "a", Reason: "rate_limited"}) // queued: full
		a.ObserveStateChange(observe.StateChange{Source: "a", From: gate.Closed, To: gate.Open})
		a.ObserveStateChange(observe.StateChange{Source: "b", From: gate.Closed, To: gate.Open})
		a.ObserveStateChange(observe.StateChange{Source: "a", From: gate.Open, To: gate.HalfOpen})
		a.ObserveAdvertised(observe.Advertised{Source: "a"})
	})
	assert.Equal(t, []string{
		"call hold", "reject a rate_limited", "state b closed→open", "state a open→half_open",
	}, h.events(), "the recorder has no Advertised method: it is not delivered to it")
	assert.Equal(t, uint64(1), a.Dropped())
}

// gauges is an observer that keeps what an in-flight gauge and a state
// gauge would show, slowly, so that a small queue overflows.
type gauges struct {
	mu       sync.Mutex
	inFlight map[string]int
	min      int // the lowest any source's in-flight count went
	state    map[string]gate.State
	attempts int
}

func (g *gauges) observer() observe.Funcs {
	return observe.Funcs{
		AttemptStart: func(e observe.AttemptStart) {
			time.Sleep(2 * time.Microsecond)
			g.mu.Lock()
			g.inFlight[e.Source]++
			g.mu.Unlock()
		},
		Attempt: func(e observe.AttemptRecord) {
			g.mu.Lock()
			g.inFlight[e.Source]--
			g.min = min(g.min, g.inFlight[e.Source])
			g.attempts++
			g.mu.Unlock()
		},
		StateChange: func(e observe.StateChange) {
			g.mu.Lock()
			g.state[e.Source] = e.To
			g.mu.Unlock()
		},
	}
}

// Under load that overflows the queue many times, a gauge fed by the
// delivered events ends where the events sent would have left it: no
// source's in-flight count goes below zero or stays above it, and each
// source's state is the last one sent.
func TestAsyncGaugesEndRightUnderOverflow(t *testing.T) {
	g := &gauges{inFlight: map[string]int{}, state: map[string]gate.State{}}
	a := observe.Async(g.observer(), 16)
	sources := []string{"a", "b", "c"}
	last := map[string]gate.State{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 500 {
				src := sources[rng.IntN(len(sources))]
				a.ObserveAttemptStart(observe.AttemptStart{Source: src, Attempt: i})
				a.ObserveRejection(observe.Rejection{Source: src, Reason: "rate_limited"})
				a.ObserveAttempt(observe.AttemptRecord{Source: src, Attempt: i})
			}
		})
	}
	// One goroutine moves the breakers, so "the last state sent" is defined.
	states := []gate.State{gate.Closed, gate.Open, gate.HalfOpen}
	for i := range 3000 {
		src := sources[i%len(sources)]
		to := states[(i/len(sources)+i)%len(states)]
		last[src] = to
		a.ObserveStateChange(observe.StateChange{Source: src, To: to})
	}
	wg.Wait()
	a.Close()

	require.NotZero(t, a.Dropped(), "the queue must overflow for this test to say anything")
	assert.Zero(t, g.min, "an in-flight count went below zero")
	for _, src := range sources {
		assert.Zero(t, g.inFlight[src], "in flight %s", src)
		assert.Equal(t, last[src], g.state[src], "state %s", src)
	}
	assert.Less(t, g.attempts, 8*500, "some attempts were dropped in pairs")
	t.Logf("dropped %d of %d events", a.Dropped(), 8*500*3+3000)
}

// Close after an overflow delivers what was kept aside, and what comes
// after Close is dropped whatever its kind.
func TestAsyncCloseDeliversWhatWasKeptAside(t *testing.T) {
	h := newHeld()
	a := observe.Async(h.full(), 1)
	h.hold(a)
	a.ObserveAttemptStart(observe.AttemptStart{Source: "a", Attempt: 1})
	a.ObserveAttempt(observe.AttemptRecord{Source: "a", Attempt: 1, Outcome: "ok"})
	done := make(chan struct{})
	go func() { a.Close(); close(done) }()
	close(h.release)
	<-done
	a.ObserveAttempt(observe.AttemptRecord{Source: "a", Attempt: 2, Outcome: "late"})
	a.ObserveStateChange(observe.StateChange{Source: "a", To: gate.Open})
	assert.Equal(t, []string{"call hold", "start a#1", "attempt a#1 ok"}, h.events())
	assert.Equal(t, uint64(2), a.Dropped())
}

// withAdvertised is the held recorder that also takes Advertised events.
type withAdvertised struct {
	observe.Funcs
	r *recorder
}

func (w withAdvertised) ObserveAdvertised(e observe.Advertised) {
	w.r.add(fmt.Sprintf("advertised %s %d", e.Source, e.Requests.Remaining))
}

// Each source's latest advertised figures survive a full queue the same
// way: the last one of each source comes, in order, once the queue drains.
func TestAsyncKeepsEachSourcesLatestAdvertised(t *testing.T) {
	h := newHeld()
	a := observe.Async(withAdvertised{h.full(), h.recorder}, 1)
	h.overflow(a, func() {
		a.ObserveRejection(observe.Rejection{Source: "a", Reason: "rate_limited"}) // queued: full
		a.ObserveAdvertised(observe.Advertised{Source: "a", Requests: observe.AdvertisedWindow{Remaining: 9}})
		a.ObserveAdvertised(observe.Advertised{Source: "b", Requests: observe.AdvertisedWindow{Remaining: 5}})
		a.ObserveAdvertised(observe.Advertised{Source: "a", Requests: observe.AdvertisedWindow{Remaining: 8}})
	})
	assert.Equal(t, []string{
		"call hold", "reject a rate_limited", "advertised b 5", "advertised a 8",
	}, h.events())
	assert.Equal(t, uint64(1), a.Dropped())
}
