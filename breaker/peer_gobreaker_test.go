package breaker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// The scenarios of sony/gobreaker v2's gobreaker_test.go, translated: each
// test is named after the one it mirrors, runs with gobreaker's settings
// mapped as the package documentation's table says, on a fake clock
// (gobreaker's pseudoSleep is clk.Advance; a call kept running by
// succeedLater is an Allow token held open), and keeps gobreaker's
// expectations except where a comment names a documented difference.

var (
	errGbFailed   = errors.New("failed")
	errGbExcluded = errors.New("excluded")
)

type gbStateChange struct {
	name     string
	from, to gate.State
}

// gbSettings are the gobreaker Settings the tests use.
type gbSettings struct {
	maxRequests  int
	interval     time.Duration
	timeout      time.Duration
	readyToTrip  func(Counts) bool
	isExcluded   func(error) bool
	isSuccessful func(error) bool
	window       bool // BucketPeriod 3s over Interval 30s, ratio rule in the gate
	change       *gbStateChange
}

// newGobreaker builds a breaker as gobreaker would run with s: MaxRequests
// n is SuccessThreshold = HalfOpenProbes = HalfOpenCalls = n; Timeout is a
// Cooldown that never grows; the default ReadyToTrip (more than 5
// consecutive failures) is ConsecutiveFailures 6; a custom ReadyToTrip
// replaces it.
func newGobreaker(t *testing.T, name string, s gbSettings) (*Breaker, *contracttest.FakeClock) {
	t.Helper()
	n := max(s.maxRequests, 1)
	p := gate.Policy{
		ConsecutiveFailures: 6,
		Cooldown:            max(s.timeout, 0),
		CooldownMultiplier:  1,
		SuccessThreshold:    n,
		HalfOpenProbes:      n,
		HalfOpenCalls:       n,
	}
	cfg := Config{IsExcluded: s.isExcluded, IsSuccessful: s.isSuccessful, Logger: discardLogger()}
	if s.readyToTrip != nil {
		p.ConsecutiveFailures = gate.Disabled
		cfg.ReadyToTrip = s.readyToTrip
		cfg.Interval = s.interval
	}
	if s.window {
		// gobreaker's rolling Counts (10 buckets of BucketPeriod) and its
		// ReadyToTrip of ≥ 3 valid requests at a ≥ 0.6 failure ratio are
		// the gate's window rule: 10 buckets of Window/10.
		p.ConsecutiveFailures = gate.Disabled
		p.Window = 30 * time.Second
		p.WindowMinCalls = 3
		p.WindowFailureRate = 0.6
		cfg.ReadyToTrip, cfg.Interval = nil, 0
	}
	if s.change != nil {
		cfg.OnStateChange = []func(StateChange){func(ev StateChange) { *s.change = gbStateChange{ev.Name, ev.From, ev.To} }}
	}
	clk := contracttest.NewFakeClock()
	g, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	cfg.Gate = g
	b, err := New(name, cfg)
	require.NoError(t, err)
	b.clock = clk
	b.tally = newTally(cfg.Interval, cfg.CountWindow, clk)
	return b, clk
}

func gbCustomSettings(change *gbStateChange) gbSettings {
	return gbSettings{
		maxRequests: 3,
		interval:    30 * time.Second,
		timeout:     90 * time.Second,
		readyToTrip: func(c Counts) bool {
			valid := c.Requests - c.TotalExclusions
			return valid >= 3 && float64(c.TotalFailures)/float64(valid) >= 0.6
		},
		isExcluded: func(err error) bool { return errors.Is(err, errGbExcluded) },
		change:     change,
	}
}

func gbSucceed(b *Breaker) error {
	_, err := Do(context.Background(), b, func(context.Context) (bool, error) { return true, nil })
	return err
}

func gbFail(b *Breaker) error {
	_, err := Do(context.Background(), b, func(context.Context) (bool, error) { return false, errGbFailed })
	if errors.Is(err, errGbFailed) {
		return nil
	}
	return err
}

func gbExclude(b *Breaker) error {
	_, err := Do(context.Background(), b, func(context.Context) (bool, error) { return false, errGbExcluded })
	if errors.Is(err, errGbExcluded) {
		return nil
	}
	return err
}

// gbSucceedLater is gobreaker's succeedLater with the delay held by the
// test: the call is admitted now and succeeds at done().
func gbSucceedLater(t *testing.T, b *Breaker) (done func()) {
	tok, err := b.Allow(context.Background())
	require.NoError(t, err)
	return func() { tok.Done(nil) }
}

// Difference: pgw's states are gate.State, Closed 0, Open 1, HalfOpen 2,
// named "closed", "open", "half_open" (gobreaker: HalfOpen 1, Open 2,
// "half-open"); the gate's records and metrics share these values.
func TestGobreaker_StateConstants(t *testing.T) {
	assert.Equal(t, gate.State(0), gate.Closed)
	assert.Equal(t, gate.State(2), gate.HalfOpen)
	assert.Equal(t, gate.State(1), gate.Open)
	assert.Equal(t, "closed", gate.Closed.String())
	assert.Equal(t, "half_open", gate.HalfOpen.String())
	assert.Equal(t, "open", gate.Open.String())
	assert.Equal(t, "state(100)", gate.State(100).String())
}

// Difference: negative durations are rejected with a *ConfigError naming
// them instead of being replaced by defaults (nothing is silently
// defaulted).
func TestGobreaker_NewCircuitBreaker(t *testing.T) {
	def, err := New("d", Config{})
	require.NoError(t, err)
	p := def.Gate().(*memory.Breaker).Policy()
	assert.Equal(t, 1, p.SuccessThreshold)
	assert.Equal(t, 1, p.HalfOpenProbes)
	assert.Equal(t, 60*time.Second, p.Cooldown)
	assert.Equal(t, gate.Closed, def.State())
	assert.Equal(t, Counts{}, def.Counts())

	var change gbStateChange
	custom, _ := newGobreaker(t, "cb", gbCustomSettings(&change))
	assert.Equal(t, "cb", custom.Name())
	assert.Equal(t, gate.Closed, custom.State())
	assert.Equal(t, Counts{}, custom.Counts())

	_, err = New("ncb", Config{Interval: -30 * time.Second, Policy: gate.Policy{Cooldown: -90 * time.Second}})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "Interval=-30s")
	assert.Contains(t, err.Error(), "Cooldown=-1m30s")
}

// Difference: a breaker needs a name (it is its key in the gate), so the
// default breaker is named "default" where gobreaker's name is "".
func TestGobreaker_DefaultCircuitBreaker(t *testing.T) {
	cb, clk := newGobreaker(t, "default", gbSettings{timeout: 60 * time.Second})
	assert.Equal(t, "default", cb.Name())
	for range 5 {
		assert.Nil(t, gbFail(cb))
	}
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 5, TotalFailures: 5, ConsecutiveFailures: 5}, cb.Counts())

	assert.Nil(t, gbSucceed(cb))
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 6, TotalSuccesses: 1, TotalFailures: 5, ConsecutiveSuccesses: 1}, cb.Counts())

	assert.Nil(t, gbFail(cb))
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 7, TotalSuccesses: 1, TotalFailures: 6, ConsecutiveFailures: 1}, cb.Counts())

	// StateClosed to StateOpen
	for range 5 {
		assert.Nil(t, gbFail(cb)) // 6 consecutive failures
	}
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())

	assert.Error(t, gbSucceed(cb))
	assert.Error(t, gbFail(cb))
	assert.Equal(t, Counts{}, cb.Counts())

	clk.Advance(60*time.Second - time.Millisecond)
	assert.Equal(t, gate.Open, cb.State())

	// StateOpen to StateHalfOpen
	clk.Advance(time.Second) // over Timeout
	assert.Equal(t, gate.HalfOpen, cb.State())

	// StateHalfOpen to StateOpen
	assert.Nil(t, gbFail(cb))
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())

	// StateOpen to StateHalfOpen
	clk.Advance(60*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())

	// StateHalfOpen to StateClosed
	assert.Nil(t, gbSucceed(cb))
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())
}

// Difference: State() reports HalfOpen once the timeout has passed, but the
// gate moves, and the StateChange open → half_open is delivered, only at
// the next call (a shared gate cannot move without one); gobreaker moves
// inside State(). The two assertions on that event are made after the call.
func TestGobreaker_CustomCircuitBreaker(t *testing.T) {
	var change gbStateChange
	cb, clk := newGobreaker(t, "cb", gbCustomSettings(&change))
	assert.Equal(t, "cb", cb.Name())

	for range 5 {
		assert.Nil(t, gbSucceed(cb))
		assert.Nil(t, gbFail(cb))
		assert.Nil(t, gbExclude(cb))
	}
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 15, TotalSuccesses: 5, TotalFailures: 5, TotalExclusions: 5, ConsecutiveFailures: 1}, cb.Counts())

	clk.Advance(30*time.Second - time.Millisecond)
	assert.Nil(t, gbSucceed(cb))
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 16, TotalSuccesses: 6, TotalFailures: 5, TotalExclusions: 5, ConsecutiveSuccesses: 1}, cb.Counts())

	clk.Advance(time.Second) // over Interval
	assert.Nil(t, gbFail(cb))
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 1, TotalFailures: 1, ConsecutiveFailures: 1}, cb.Counts())

	// StateClosed to StateOpen
	assert.Nil(t, gbSucceed(cb))
	assert.Nil(t, gbFail(cb)) // failure ratio: 2/3 >= 0.6
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())
	assert.Equal(t, gbStateChange{"cb", gate.Closed, gate.Open}, change)

	// StateOpen to StateHalfOpen
	clk.Advance(90*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())

	// Excluded requests are neutral in Half-Open state.
	assert.Nil(t, gbExclude(cb))
	assert.Equal(t, gbStateChange{"cb", gate.Open, gate.HalfOpen}, change) // delivered at the call (difference)
	assert.Nil(t, gbExclude(cb))
	assert.Nil(t, gbExclude(cb))
	assert.Nil(t, gbExclude(cb))
	assert.Equal(t, gate.HalfOpen, cb.State())

	// In Half-Open, the first real failure immediately re-opens the breaker.
	assert.Nil(t, gbFail(cb))
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())
	assert.Equal(t, gbStateChange{"cb", gate.HalfOpen, gate.Open}, change)

	clk.Advance(90*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())

	// Successes increment counters but do not close the breaker until the
	// MaxRequests threshold is satisfied.
	assert.Nil(t, gbSucceed(cb))
	assert.Nil(t, gbSucceed(cb))
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Equal(t, Counts{Requests: 2, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, cb.Counts())

	// StateHalfOpen to StateClosed
	done := gbSucceedLater(t, cb) // 3 consecutive successes
	assert.Equal(t, Counts{Requests: 3, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, cb.Counts())
	assert.Error(t, gbSucceed(cb)) // over MaxRequests
	done()
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())
	assert.Equal(t, gbStateChange{"cb", gate.HalfOpen, gate.Closed}, change)
}

// Difference: gobreaker's rolling window lives in its Counts; pgw's lives in
// the gate (Policy.Window, 10 buckets of Window/10, shared by every process),
// so the window's totals are read from the gate's Snapshot (WindowCalls are
// gobreaker's valid requests: exclusions are not outcomes there), while
// Counts stay per generation. The bucket internals (bucketAt, age) have no
// counterpart. State changes are delivered at the next call, as in
// TestGobreaker_CustomCircuitBreaker.
func TestGobreaker_RollingWindowCircuitBreaker(t *testing.T) {
	var change gbStateChange
	s := gbCustomSettings(&change)
	s.window = true
	rb, clk := newGobreaker(t, "rw", s)
	// Bucket boundaries of the gate fall on multiples of 3s of the clock;
	// gobreaker's fall on multiples of 3s since its start. Align them.
	clk.Advance(time.Second)
	window := func() (valid, failures int) {
		snap, err := rb.Gate().Snapshot(t.Context(), "rw")
		require.NoError(t, err)
		return snap.WindowCalls, snap.WindowFailures
	}
	assertWindow := func(requests, successes, failures, exclusions int) {
		t.Helper()
		v, f := window()
		assert.Equal(t, requests-exclusions, v, "valid requests in the window")
		assert.Equal(t, successes+failures, v)
		assert.Equal(t, failures, f, "failures in the window")
	}

	for range 5 {
		assert.Nil(t, gbSucceed(rb))
		assert.Nil(t, gbFail(rb))
		assert.Nil(t, gbExclude(rb))
	}
	assert.Equal(t, gate.Closed, rb.State())
	assertWindow(15, 5, 5, 5)

	clk.Advance(3 * time.Second)
	assert.Nil(t, gbSucceed(rb))
	assertWindow(16, 6, 5, 5)

	clk.Advance(2 * time.Second)
	assert.Nil(t, gbSucceed(rb))
	assert.Nil(t, gbExclude(rb))
	assertWindow(18, 7, 5, 6)

	clk.Advance(2 * time.Second)
	assert.Nil(t, gbExclude(rb))
	assert.Nil(t, gbSucceed(rb))
	assert.Equal(t, gate.Closed, rb.State())
	assertWindow(20, 8, 5, 7)

	clk.Advance(2 * time.Second)
	assert.Nil(t, gbFail(rb))
	assert.Equal(t, gate.Closed, rb.State())
	assertWindow(21, 8, 6, 7)

	// fill all the buckets
	for i := range 6 {
		clk.Advance(3 * time.Second)
		assert.Nil(t, gbSucceed(rb))
		assert.Nil(t, gbFail(rb))
		assertWindow(23+2*i, 9+i, 7+i, 7)
	}

	// first bucket should be discarded
	clk.Advance(3 * time.Second)
	assert.Nil(t, gbFail(rb))
	assertWindow(19, 9, 8, 2)

	for i := range 5 {
		assert.Nil(t, gbFail(rb))
		assertWindow(20+i, 9, 9+i, 2)
	}
	assert.Equal(t, gate.Closed, rb.State())

	assert.Nil(t, gbFail(rb)) // failureRate = 14/23 > 0.6
	assert.Equal(t, gate.Open, rb.State())
	assert.Equal(t, gbStateChange{"rw", gate.Closed, gate.Open}, change)

	// StateOpen to StateHalfOpen
	clk.Advance(90*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, rb.State())

	assert.Nil(t, gbSucceed(rb))
	assert.Equal(t, gbStateChange{"rw", gate.Open, gate.HalfOpen}, change) // delivered at the call (difference)
	assert.Nil(t, gbSucceed(rb))
	assert.Equal(t, gate.HalfOpen, rb.State())
	assert.Equal(t, Counts{Requests: 2, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, rb.Counts())

	// StateHalfOpen to StateClosed
	done := gbSucceedLater(t, rb) // 3 consecutive successes
	assert.Equal(t, Counts{Requests: 3, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, rb.Counts())
	assert.Error(t, gbSucceed(rb)) // over MaxRequests
	done()
	assert.Equal(t, gate.Closed, rb.State())
	assert.Equal(t, Counts{}, rb.Counts())
	assert.Equal(t, gbStateChange{"rw", gate.HalfOpen, gate.Closed}, change)
}

func TestGobreaker_PanicInRequest(t *testing.T) {
	cb, _ := newGobreaker(t, "default", gbSettings{timeout: 60 * time.Second})
	assert.Panics(t, func() {
		_, _ = Do(context.Background(), cb, func(context.Context) (bool, error) { panic("oops") })
	})
	assert.Equal(t, Counts{Requests: 1, TotalFailures: 1, ConsecutiveFailures: 1}, cb.Counts())
}

func TestGobreaker_Generation(t *testing.T) {
	cb, clk := newGobreaker(t, "cb", gbCustomSettings(nil))
	clk.Advance(29 * time.Second)
	assert.Nil(t, gbSucceed(cb))
	done := gbSucceedLater(t, cb)
	clk.Advance(500 * time.Millisecond)
	assert.Equal(t, Counts{Requests: 2, TotalSuccesses: 1, ConsecutiveSuccesses: 1}, cb.Counts())

	clk.Advance(500 * time.Millisecond) // over Interval
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{}, cb.Counts())

	// the request from the previous generation has no effect on the counts
	done()
	assert.Equal(t, Counts{}, cb.Counts())
}

func TestGobreaker_CustomIsSuccessful(t *testing.T) {
	var strict atomic.Bool
	cb, _ := newGobreaker(t, "default", gbSettings{timeout: 60 * time.Second, isSuccessful: func(err error) bool {
		return !strict.Load() || err == nil
	}})
	for range 5 {
		assert.Nil(t, gbFail(cb))
	}
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, Counts{Requests: 5, TotalSuccesses: 5, ConsecutiveSuccesses: 5}, cb.Counts())

	cb.ResetCounts()
	strict.Store(true)
	for range 6 {
		assert.Nil(t, gbFail(cb))
	}
	assert.Equal(t, gate.Open, cb.State())
}

func TestGobreaker_CircuitBreakerInParallel(t *testing.T) {
	cb, _ := newGobreaker(t, "cb", gbCustomSettings(nil))
	ch := make(chan error)
	var successCount, excludeCount atomic.Uint64
	const numReqs = 10000
	routine := func() {
		for i := range numReqs {
			var err error
			switch i % 2 {
			case 0:
				err = gbSucceed(cb)
				successCount.Add(1)
			case 1:
				err = gbExclude(cb)
				excludeCount.Add(1)
			}
			ch <- err
		}
	}
	const numRoutines = 10
	for range numRoutines {
		go routine()
	}
	total := uint64(numReqs * numRoutines)
	for range total {
		assert.Nil(t, <-ch)
	}
	assert.Equal(t, Counts{Requests: total, TotalSuccesses: successCount.Load(), ConsecutiveSuccesses: successCount.Load(), TotalExclusions: excludeCount.Load()}, cb.Counts())
}

func TestGobreaker_IsExcludedAndIsSuccessfulCombination(t *testing.T) {
	cb, _ := newGobreaker(t, "default", gbSettings{
		timeout:      60 * time.Second,
		isExcluded:   func(err error) bool { return errors.Is(err, errGbExcluded) },
		isSuccessful: func(err error) bool { return err == nil },
	})
	for range 3 {
		assert.Nil(t, gbExclude(cb))
	}
	assert.Equal(t, Counts{Requests: 3, TotalExclusions: 3}, cb.Counts(), "excluded errors must not be counted as success or failure")
	for range 3 {
		assert.Nil(t, gbSucceed(cb))
	}
	assert.Equal(t, Counts{Requests: 6, TotalSuccesses: 3, ConsecutiveSuccesses: 3, TotalExclusions: 3}, cb.Counts())
	for range 2 {
		assert.Nil(t, gbFail(cb))
	}
	assert.Equal(t, Counts{Requests: 8, TotalSuccesses: 3, TotalFailures: 2, TotalExclusions: 3, ConsecutiveFailures: 2}, cb.Counts())
}

func TestGobreaker_RollingWindowCircuitBreakerInParallel(t *testing.T) {
	s := gbCustomSettings(nil)
	s.window = true
	rb, _ := newGobreaker(t, "rw", s)
	const numGoroutines = 12
	const numRequests = 100
	var wg sync.WaitGroup
	for range numGoroutines {
		wg.Go(func() {
			for j := range numRequests {
				switch j % 3 {
				case 0:
					assert.Nil(t, gbSucceed(rb))
				case 1:
					assert.Nil(t, gbFail(rb))
				case 2:
					assert.Nil(t, gbExclude(rb))
				}
			}
		})
	}
	wg.Wait()
}
