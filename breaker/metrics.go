package breaker

import (
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Metrics is a snapshot of one breaker's local counts. The
// counts are this Breaker's own calls since it was created; with a gate
// shared by several processes, each process counts its own.
type Metrics struct {
	// Name is the breaker's name.
	Name string
	// State is the state last observed from the gate (Breaker.State reads
	// the gate now).
	State gate.State
	// TotalCalls is every call that asked the breaker and is over:
	// Successes + Failures + Excluded + Cancelled + Rejections + GateErrors
	// + Stale.
	// Calls still running are not in it.
	TotalCalls uint64
	// Successes counts calls classified as successes: a nil error, or an
	// error that Config.IsSuccessful, Config.HandleErrors or a DoResult
	// verdict counts as a success.
	Successes uint64
	// Failures counts calls classified as failures, calls that panicked,
	// and calls that returned a Fatal error.
	Failures uint64
	// Excluded counts calls whose error was excluded (not counted by the
	// gate).
	Excluded uint64
	// Cancelled counts calls ended by their caller: the caller's context
	// was done, the goroutine exited through runtime.Goexit, or a
	// state-change listener panicked while the call's admission was
	// observed (the call then never runs and its probe lease, if any, is
	// given back), or a classifier (IsSuccessful, IsExcluded, a DoResult
	// verdict) panicked while the call's outcome was classified (its
	// lease is given back likewise).
	Cancelled uint64
	// Rejections counts calls refused without running (*OpenError).
	Rejections uint64
	// GateErrors counts calls that could not ask the gate.
	GateErrors uint64
	// Stale counts calls whose success or failure the gate ignored: they
	// were admitted in an earlier generation (before a trip, a close or an
	// operator's override) or their probe lease had expired, so their
	// outcome says nothing about the current phase. They are in no other
	// count and neither extend nor break a run.
	Stale uint64
	// ConsecutiveSuccesses and ConsecutiveFailures count the latest run of
	// successes or failures; excluded and cancelled calls and rejections
	// neither extend nor break a run.
	ConsecutiveSuccesses uint64
	ConsecutiveFailures  uint64
	// LastStateChange is when the last state change was observed; zero if
	// none was.
	LastStateChange time.Time
}

// counters are the atomics behind Metrics. The success path adds to one
// (runs.succ) and reads two others.
type counters struct {
	runs       runs
	excluded   atomic.Uint64
	cancelled  atomic.Uint64
	rejections atomic.Uint64
	gateErrors atomic.Uint64
	stale      atomic.Uint64
}

func (c *counters) count(r result) {
	switch r {
	case resSuccess:
		c.runs.success()
	case resFailure, resFatal:
		c.runs.failure()
	case resExcluded:
		c.excluded.Add(1)
	case resCancelled:
		c.cancelled.Add(1)
	}
}

// runs counts successes and failures and the latest run of either with a
// single read-modify-write per outcome: a run is the total minus the total
// at the last outcome of the other kind, and that mark is written only when
// it changes, so a steady stream of successes writes nothing but succ.
type runs struct {
	succ, fail         atomic.Uint64 // totals
	succMark, failMark atomic.Uint64 // succ at the last failure, fail at the last success
}

func (r *runs) success() {
	r.succ.Add(1)
	if f := r.fail.Load(); r.failMark.Load() != f {
		r.failMark.Store(f)
	}
}

func (r *runs) failure() {
	r.fail.Add(1)
	if s := r.succ.Load(); r.succMark.Load() != s {
		r.succMark.Store(s)
	}
}

// consecutive returns the latest run: successes and failures since the last
// outcome of the other kind (one of them is 0 but under concurrency).
func (r *runs) consecutive() (succ, fail uint64) {
	s, sm := r.succ.Load(), r.succMark.Load()
	f, fm := r.fail.Load(), r.failMark.Load()
	if s > sm {
		succ = s - sm
	}
	if f > fm {
		fail = f - fm
	}
	return succ, fail
}

// Metrics returns a snapshot of the breaker's counts. It takes no lock and
// does no I/O, so a state-change listener may call it. Each field is read
// atomically, but calls finishing meanwhile may be in some fields and not
// yet in others.
func (b *Breaker) Metrics() Metrics {
	c := &b.counters
	m := Metrics{
		Name:       b.name,
		State:      gate.State(b.seen.Load()),
		Successes:  c.runs.succ.Load(),
		Failures:   c.runs.fail.Load(),
		Excluded:   c.excluded.Load(),
		Cancelled:  c.cancelled.Load(),
		Rejections: c.rejections.Load(),
		GateErrors: c.gateErrors.Load(),
		Stale:      c.stale.Load(),
	}
	m.ConsecutiveSuccesses, m.ConsecutiveFailures = c.runs.consecutive()
	m.TotalCalls = m.Successes + m.Failures + m.Excluded + m.Cancelled + m.Rejections + m.GateErrors + m.Stale
	if t := b.lastChange.Load(); t != nil {
		m.LastStateChange = *t
	}
	return m
}
