package breaker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Counts are the breaker's counts of the current generation: gobreaker's
// Counts, with failsafe-go's execution metrics as methods. They start from
// zero at every state change the breaker observes (every new generation of
// the gate: a trip, the move to HalfOpen, a close, an operator's override),
// every Config.Interval while Closed, and on ResetCounts. An outcome of a call
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

// tally keeps the Counts of one breaker as a sequence of phases: one per
// gate generation, and one per Interval while Closed. A call carries the
// phase it was admitted in and is counted only while that phase is still
// the current one. The success path reads one pointer and adds to atomics:
// no lock and no allocation; a new phase (a state change, an Interval)
// takes the lock and allocates.
type tally struct {
	mu       sync.Mutex // serialises the start of phases
	cur      atomic.Pointer[phase]
	prev     atomic.Pointer[phase] // the phase of the previous generation
	interval time.Duration
	window   int
	clock    gate.Clock // nil: time.Now
}

// phase holds the counts of one phase.
type phase struct {
	gen   uint64     // gate generation
	state gate.State // the state of that generation
	until time.Time  // end of the Interval while Closed; zero when none

	requests, exclusions atomic.Uint64
	runs                 runs

	// ring holds the last window outcomes while Closed (true: failure)
	// when CountWindow is set; mu guards it and the totals over it. It
	// grows with the outcomes up to window, so that a large CountWindow
	// costs memory only as outcomes come, not at every phase's start.
	mu               sync.Mutex
	ring             []bool
	window           int
	pos              int
	winSucc, winFail uint64
}

// ringStart is the room a Closed phase's outcome ring starts with.
const ringStart = 64

func newTally(interval time.Duration, window int, clock gate.Clock) *tally {
	t := &tally{interval: interval, window: window, clock: clock}
	t.cur.Store(t.newPhase(0, gate.Closed))
	return t
}

func (t *tally) now() time.Time {
	if t.clock != nil {
		return t.clock.Now()
	}
	return time.Now()
}

func (t *tally) newPhase(gen uint64, st gate.State) *phase {
	p := &phase{gen: gen, state: st}
	if st == gate.Closed {
		if t.window > 0 {
			p.ring, p.window = make([]bool, 0, min(t.window, ringStart)), t.window
		}
		if t.interval > 0 {
			p.until = t.now().Add(t.interval)
		}
	}
	return p
}

// expired reports whether p is a Closed phase whose Interval is over.
func (t *tally) expired(p *phase) bool {
	return !p.until.IsZero() && !t.now().Before(p.until)
}

// next starts a new phase when gen is newer than the current one's, or its
// Interval is over, and returns the current phase.
func (t *tally) next(gen uint64, st gate.State) *phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.cur.Load()
	switch {
	case gen > p.gen:
		t.prev.Store(p)
		p = t.newPhase(gen, st)
		t.cur.Store(p)
	case t.expired(p):
		p = t.newPhase(p.gen, p.state)
		t.cur.Store(p)
	}
	return p
}

// admit counts an admitted call and returns the phase it belongs to.
func (t *tally) admit(d gate.Decision) *phase {
	p := t.cur.Load()
	if d.Generation > p.gen || (t.interval > 0 && t.expired(p)) {
		p = t.next(d.Generation, d.State)
	}
	p.requests.Add(1)
	return p
}

// seen starts a new phase when an answer of the gate shows a newer
// generation.
func (t *tally) seen(gen uint64, st gate.State) {
	if gen > t.cur.Load().gen {
		t.next(gen, st)
	}
}

// add counts r.
func (p *phase) add(r result) {
	switch r {
	case resSuccess, resFailure, resFatal:
		failed := r != resSuccess
		if failed {
			p.runs.failure()
		} else {
			p.runs.success()
		}
		if p.ring == nil {
			return
		}
		p.mu.Lock()
		if len(p.ring) < p.window {
			// Filling: the oldest outcome stays at 0, where pos points
			// once the ring is full.
			p.ring = append(p.ring, failed)
		} else {
			if p.ring[p.pos] {
				p.winFail--
			} else {
				p.winSucc--
			}
			p.ring[p.pos] = failed
			p.pos = (p.pos + 1) % p.window
		}
		if failed {
			p.winFail++
		} else {
			p.winSucc++
		}
		p.mu.Unlock()
	default:
		p.exclusions.Add(1)
	}
}

// counts reads p. Each field is read atomically; calls finishing meanwhile
// may be in some fields and not yet in others.
func (p *phase) counts() Counts {
	if p == nil {
		return Counts{}
	}
	c := Counts{
		Requests:        p.requests.Load(),
		TotalSuccesses:  p.runs.succ.Load(),
		TotalFailures:   p.runs.fail.Load(),
		TotalExclusions: p.exclusions.Load(),
	}
	c.ConsecutiveSuccesses, c.ConsecutiveFailures = p.runs.consecutive()
	if p.ring != nil {
		p.mu.Lock()
		c.TotalSuccesses, c.TotalFailures = p.winSucc, p.winFail
		p.mu.Unlock()
	}
	return c
}

// count counts the outcome r of a call admitted in phase p, unless a new
// phase has started since.
func (t *tally) count(p *phase, r result) {
	if t.live(p) {
		p.add(r)
	}
}

// live reports whether outcomes of calls admitted in phase p are still
// counted: p is the current phase and, with an Interval, that interval is
// not over yet (a call that outlived its interval belongs to counts that
// have ended, even when no call has started the next ones yet).
func (t *tally) live(p *phase) bool {
	return p == t.cur.Load() && (t.interval == 0 || !t.expired(p))
}

// settle counts the outcome r of a call admitted in phase p when counted
// (the gate took it) and p is still current, then starts a new phase when
// the gate's answer shows a newer generation.
func (t *tally) settle(p *phase, r result, counted bool, gen uint64, st gate.State) {
	if counted {
		t.count(p, r)
	}
	t.seen(gen, st)
}

// failNow counts a failure of a call admitted in phase p at once, before
// the gate has answered, and returns the counts with it in them, so that a
// trip predicate asked by failures ending together sees all of them (each
// adds before it reads). It returns false, counting nothing, when p is no
// longer live or not Closed.
func (t *tally) failNow(p *phase) (Counts, bool) {
	if !t.live(p) || p.state != gate.Closed {
		return Counts{}, false
	}
	p.add(resFailure)
	return p.counts(), true
}

// snapshot returns the current counts.
func (t *tally) snapshot() Counts {
	p := t.cur.Load()
	if t.interval > 0 && t.expired(p) {
		p = t.next(p.gen, p.state)
	}
	return p.counts()
}

// ended returns the counts of the generation before the current one.
func (t *tally) ended() Counts { return t.prev.Load().counts() }

// reset starts the counts again.
func (t *tally) reset() {
	t.mu.Lock()
	p := t.cur.Load()
	t.cur.Store(t.newPhase(p.gen, p.state))
	t.mu.Unlock()
}

// Counts returns the counts of the current generation. It does no I/O, so a
// listener may call it; each field is read atomically, and calls finishing
// meanwhile may be in some fields and not yet in others.
func (b *Breaker) Counts() Counts { return b.tally.snapshot() }

// ResetCounts starts the counts of the current generation again, as a new
// generation would; calls admitted before it are no longer counted. The
// gate's own counts are untouched (see Close for a full reset).
func (b *Breaker) ResetCounts() { b.tally.reset() }
