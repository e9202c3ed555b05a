package breaker

import (
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Counts are the breaker's counts of the current generation: gobreaker's
// Counts, with failsafe-go's execution metrics as methods. They start from
// zero at every state change the breaker observes (every new generation of
// the gate: a trip, the move to HalfOpen, a close, an operator's override),
// every Config.Interval while Closed, and on Reset. An outcome of a call
// admitted before the counts started again is not counted, so a slow call
// from an earlier phase cannot move them.
//
// Counts are this Breaker's own: with a gate shared by several processes,
// each process counts its own calls (the gate's shared counts are in its
// Snapshot).
type Counts struct {
	// Requests counts the calls admitted in this generation, including
	// those still running. Rejected calls are not requests.
	Requests uint64
	// TotalSuccesses and TotalFailures count finished calls. With
	// Config.CountWindow set they cover only the last CountWindow outcomes
	// while Closed (failsafe-go's count-based thresholding).
	TotalSuccesses uint64
	TotalFailures  uint64
	// TotalExclusions counts admitted calls that said nothing about the
	// dependency: excluded errors and calls ended by their caller.
	TotalExclusions uint64
	// ConsecutiveSuccesses and ConsecutiveFailures count the latest run;
	// exclusions neither extend nor break it.
	ConsecutiveSuccesses uint64
	ConsecutiveFailures  uint64
}

// Executions is TotalSuccesses + TotalFailures: the outcomes that count
// (failsafe-go's Executions).
func (c Counts) Executions() uint64 { return c.TotalSuccesses + c.TotalFailures }

// FailureRate is TotalFailures / Executions, 0 when there are none.
func (c Counts) FailureRate() float64 {
	if n := c.Executions(); n > 0 {
		return float64(c.TotalFailures) / float64(n)
	}
	return 0
}

// SuccessRate is TotalSuccesses / Executions, 0 when there are none.
func (c Counts) SuccessRate() float64 {
	if n := c.Executions(); n > 0 {
		return float64(c.TotalSuccesses) / float64(n)
	}
	return 0
}

// tally keeps the Counts of one breaker. Every call takes its lock twice
// (admission and outcome), briefly and without allocating.
type tally struct {
	mu       sync.Mutex
	gen      uint64     // gate generation the counts belong to
	state    gate.State // the state of that generation
	epoch    uint64     // bumps at every restart; a call carries the one it was admitted in
	until    time.Time  // end of the current Interval while Closed; zero when none
	interval time.Duration
	clock    gate.Clock // nil: time.Now
	c        Counts
	prev     Counts // the counts of the generation before this one
	ring     []bool // last outcomes while Closed (true: failure), when CountWindow is set
	pos, n   int
}

func newTally(interval time.Duration, window int, clock gate.Clock) *tally {
	t := &tally{interval: interval, clock: clock}
	if window > 0 {
		t.ring = make([]bool, window)
	}
	if interval > 0 {
		t.until = t.now().Add(interval)
	}
	return t
}

func (t *tally) now() time.Time {
	if t.clock != nil {
		return t.clock.Now()
	}
	return time.Now()
}

// restart starts the counts again; t.mu is held.
func (t *tally) restart() {
	t.epoch++
	t.c = Counts{}
	t.pos, t.n = 0, 0
	t.until = time.Time{}
	if t.interval > 0 && t.state == gate.Closed {
		t.until = t.now().Add(t.interval)
	}
}

// advance restarts the counts when the gate moved to a newer generation or
// the Closed interval is over; t.mu is held.
func (t *tally) advance(gen uint64, st gate.State) {
	if gen > t.gen {
		t.gen, t.state = gen, st
		t.prev = t.c
		t.restart()
		return
	}
	if !t.until.IsZero() && t.state == gate.Closed && !t.now().Before(t.until) {
		t.restart()
	}
}

// admit counts an admitted call and returns the epoch it belongs to.
func (t *tally) admit(d gate.Decision) uint64 {
	t.mu.Lock()
	t.advance(d.Generation, d.State)
	t.c.Requests++
	e := t.epoch
	t.mu.Unlock()
	return e
}

// seen restarts the counts when an answer of the gate shows a newer
// generation.
func (t *tally) seen(gen uint64, st gate.State) {
	t.mu.Lock()
	if gen > t.gen {
		t.advance(gen, st)
	}
	t.mu.Unlock()
}

// add counts r into c (and the ring); t.mu is held.
func (t *tally) add(c *Counts, r result, ring bool) {
	switch r {
	case resSuccess, resFailure, resFatal:
		failed := r != resSuccess
		if failed {
			c.TotalFailures++
			c.ConsecutiveFailures++
			c.ConsecutiveSuccesses = 0
		} else {
			c.TotalSuccesses++
			c.ConsecutiveSuccesses++
			c.ConsecutiveFailures = 0
		}
		if ring && t.ring != nil && t.state == gate.Closed {
			if t.n == len(t.ring) {
				if t.ring[t.pos] {
					c.TotalFailures--
				} else {
					c.TotalSuccesses--
				}
			} else {
				t.n++
			}
			t.ring[t.pos] = failed
			t.pos = (t.pos + 1) % len(t.ring)
		}
	default:
		c.TotalExclusions++
	}
}

// count counts the outcome of a call admitted in epoch e; an outcome from an
// earlier epoch is dropped.
func (t *tally) count(e uint64, r result) {
	t.mu.Lock()
	if e == t.epoch {
		t.add(&t.c, r, true)
	}
	t.mu.Unlock()
}

// settle counts the outcome r of a call admitted in epoch e when counted
// (the gate took it) and e is still current, then restarts the counts when
// the gate's answer shows a newer generation: one lock for both.
func (t *tally) settle(e uint64, r result, counted bool, gen uint64, st gate.State) {
	t.mu.Lock()
	if counted && e == t.epoch {
		t.add(&t.c, r, true)
	}
	if gen > t.gen {
		t.advance(gen, st)
	}
	t.mu.Unlock()
}

// prospect returns the counts as they would be with one more failure of
// epoch e, and false when e is no longer current.
func (t *tally) prospect(e uint64) (Counts, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e != t.epoch || t.state != gate.Closed {
		return Counts{}, false
	}
	c := t.c
	c.TotalFailures++
	c.ConsecutiveFailures++
	c.ConsecutiveSuccesses = 0
	if t.ring != nil && t.n == len(t.ring) {
		if t.ring[t.pos] {
			c.TotalFailures--
		} else {
			c.TotalSuccesses--
		}
	}
	return c, true
}

// snapshot returns the current counts.
func (t *tally) snapshot() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(t.gen, t.state)
	return t.c
}

// ended returns the counts of the generation before the current one.
func (t *tally) ended() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prev
}

// reset starts the counts again.
func (t *tally) reset() {
	t.mu.Lock()
	t.restart()
	t.mu.Unlock()
}

// Counts returns the counts of the current generation. It takes a short
// lock and does no I/O.
func (b *Breaker) Counts() Counts { return b.tally.snapshot() }

// ResetCounts starts the counts of the current generation again, as a new
// generation would; calls admitted before it are no longer counted. The
// gate's own counts are untouched (see Close for a full reset).
func (b *Breaker) ResetCounts() { b.tally.reset() }
