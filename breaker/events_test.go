package breaker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// collector records the changes a listener sees.
type collector struct {
	mu  sync.Mutex
	evs []StateChange
}

func (c *collector) listen(ev StateChange) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

func (c *collector) events() []StateChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]StateChange(nil), c.evs...)
}

func transitions(evs []StateChange) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.From.String()+"→"+ev.To.String())
	}
	return out
}

func TestStateChangeEventsFollowTheCycle(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 3, Cooldown: 10 * time.Second},
		Config{OnStateChange: []func(StateChange){c.listen}})
	start := clk.Now()
	require.NoError(t, b.Execute(t.Context(), succeed))
	trip(t, b, 3)
	clk.Advance(10 * time.Second)
	require.NoError(t, b.Execute(t.Context(), func(context.Context) error {
		clk.Advance(time.Second)
		return nil
	}))

	evs := c.events()
	require.Equal(t, []string{"closed→open", "open→half_open", "half_open→closed"}, transitions(evs))
	for i, ev := range evs {
		assert.Equal(t, uint64(i+1), ev.Seq)
		assert.Equal(t, "api", ev.Name)
		assert.Equal(t, ev.To, ev.Metrics.State)
		assert.Equal(t, ev.To, ev.Gate.State)
		assert.Equal(t, ev.At, ev.Metrics.LastStateChange)
	}

	open := evs[0]
	assert.Equal(t, start, open.At)
	assert.Equal(t, uint64(3), open.Metrics.ConsecutiveFailures, "the failures that tripped it")
	assert.Equal(t, uint64(3), open.Metrics.Failures)
	assert.Equal(t, uint64(1), open.Metrics.Successes)
	assert.Equal(t, 10*time.Second, open.Gate.RetryAfter)
	assert.Equal(t, start.Add(10*time.Second), open.Gate.OpenUntil)

	assert.Equal(t, start.Add(10*time.Second), evs[1].At)
	assert.Equal(t, start.Add(11*time.Second), evs[2].At)
	assert.Equal(t, uint64(1), evs[2].Metrics.ConsecutiveSuccesses)
	assert.Equal(t, evs[2].At, b.Metrics().LastStateChange)
}

// Listeners run outside every lock: one that calls back into the breaker,
// even causing a change itself, must not deadlock, and the nested change is
// delivered after the one being handled.
func TestListenerMayCallTheBreaker(t *testing.T) {
	var c collector
	b, _, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second}, Config{})
	var seenMetrics Metrics
	var nestedErr error
	b.OnStateChange(func(ev StateChange) {
		seenMetrics = b.Metrics()
		if ev.To == gate.Open {
			nestedErr = b.Execute(context.Background(), succeed) // rejected: Open
		}
	})
	b.OnStateChange(c.listen)

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Execute(context.Background(), fail)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a listener calling back into the breaker deadlocked")
	}
	assert.Equal(t, gate.Open, seenMetrics.State)
	assert.ErrorIs(t, nestedErr, ErrOpen)
	assert.Equal(t, []string{"closed→open"}, transitions(c.events()))
}

func TestListenerCausingAChangeGetsItAfterTheCurrentOne(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 10 * time.Second}, Config{})
	var depth, maxDepth atomic.Int32
	var queuedDuringListener int
	b.OnStateChange(func(ev StateChange) {
		maxDepth.Store(max(maxDepth.Load(), depth.Add(1)))
		defer depth.Add(-1)
		c.listen(ev)
		if ev.Seq == 1 {
			// A probe run from inside the listener moves the breaker twice
			// (open → half_open → closed); those changes wait their turn.
			clk.Advance(10 * time.Second)
			require.NoError(t, b.Execute(context.Background(), succeed))
			queuedDuringListener = len(c.events())
		}
	})
	require.Error(t, b.Execute(t.Context(), fail))
	assert.Equal(t, []string{"closed→open", "open→half_open", "half_open→closed"}, transitions(c.events()))
	assert.Equal(t, 1, queuedDuringListener, "nested changes are delivered after the current listener returns")
	assert.Equal(t, int32(1), maxDepth.Load(), "listeners are never re-entered")
}

// Under concurrent calls the changes of one breaker arrive one at a time, in
// Seq order, each starting where the previous one ended.
func TestStateChangesAreDeliveredInOrderUnderConcurrency(t *testing.T) {
	var c collector
	var running, overlap atomic.Int32
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second, CooldownMultiplier: 1}, Config{})
	b.OnStateChange(func(ev StateChange) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		c.listen(ev)
		running.Add(-1)
	})

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				if (i+g)%17 == 0 {
					clk.Advance(500 * time.Millisecond)
				}
				// Two failures in a row out of every five, so the breaker
				// trips even when the goroutines happen to run one by one.
				fn := succeed
				if (i+g)%5 < 2 {
					fn = fail
				}
				_ = b.Execute(context.Background(), fn)
			}
		})
	}
	wg.Wait()

	evs := c.events()
	require.NotEmpty(t, evs)
	t.Logf("%d changes", len(evs))
	assert.Zero(t, overlap.Load(), "listeners ran concurrently")
	prev := gate.Closed
	for i, ev := range evs {
		require.Equal(t, uint64(i+1), ev.Seq)
		require.Equal(t, prev, ev.From, "change %d does not start where %d ended", ev.Seq, i)
		require.NotEqual(t, ev.From, ev.To)
		prev = ev.To
	}
	assert.Equal(t, b.State(), prev)
}

// A stale answer (a call admitted before the breaker opened, finishing
// after) does not make the breaker report a change back: the gate's
// generation orders what was seen.
func TestStaleObservationReportsNoChange(t *testing.T) {
	var c collector
	g := &scriptGate{
		decision: gate.Decision{Allowed: true, State: gate.Closed},
		update:   gate.Update{Applied: true, State: gate.Open},
		snap:     gate.Snapshot{State: gate.Open, Generation: 2},
	}
	b, err := New("api", Config{Gate: g, Logger: discardLogger(), OnStateChange: []func(StateChange){c.listen}})
	require.NoError(t, err)
	require.NoError(t, b.Execute(t.Context(), succeed)) // Record answers Open
	require.Equal(t, []string{"closed→open"}, transitions(c.events()))

	// A late Closed answer; the gate still says Open at generation 2.
	g.set(func(s *scriptGate) { s.update = gate.Update{Applied: false, State: gate.Closed} })
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, gate.Open, b.Metrics().State, "the state last observed")
	assert.Len(t, c.events(), 1)

	// An older snapshot than one already seen is ignored too.
	g.set(func(s *scriptGate) { s.snap = gate.Snapshot{State: gate.Closed, Generation: 1} })
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, gate.Open, b.Metrics().State, "the state last observed")
	assert.Len(t, c.events(), 1)
}

// The fast path costs no gate read: only a state different from the last
// one seen triggers a Snapshot.
func TestSteadyStateReadsNoSnapshot(t *testing.T) {
	g := &scriptGate{decision: gate.Decision{Allowed: true, State: gate.Closed}, update: gate.Update{Applied: true, State: gate.Closed}}
	b, err := New("api", Config{Gate: g, Logger: discardLogger()})
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, b.Execute(t.Context(), succeed))
	}
	assert.Zero(t, g.snaps)
}

// A panicking listener does not wedge delivery: later changes still arrive.
func TestPanickingListenerDoesNotStopDelivery(t *testing.T) {
	var c collector
	b, clk, _ := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second}, Config{})
	b.OnStateChange(func(ev StateChange) {
		if ev.Seq == 1 {
			panic("listener bug")
		}
	})
	b.OnStateChange(c.listen)
	require.PanicsWithValue(t, "listener bug", func() { _ = b.Execute(t.Context(), fail) })
	assert.Equal(t, uint64(1), b.Metrics().Failures, "the call was recorded before the listener ran")
	clk.Advance(time.Second)
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, []string{"open→half_open", "half_open→closed"}, transitions(c.events()))
	assert.Panics(t, func() { b.OnStateChange(nil) })
}
