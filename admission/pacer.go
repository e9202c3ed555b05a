package admission

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Defaults of the zero fields of a PacerConfig.
const (
	DefaultPacerCeiling = 64
	DefaultDecreaseHold = time.Second
)

// PacerConfig configures a Pacer. The zero value is valid and means the
// defaults.
type PacerConfig struct {
	// Ceiling is the largest window (default 64). A source's MaxInFlight
	// quota caps concurrency independently; the window only ever shrinks
	// below what upstream throttling allows.
	Ceiling int
	// Initial is the window a source starts with (default Ceiling: no
	// throttling seen, no pacing).
	Initial int
	// DecreaseHold is how long after a halving further throttles of the
	// same source are taken as the same congestion event and do not halve
	// again (default 1s). A burst admitted under the old window answers 429
	// within about one request latency; without the hold that one burst
	// would collapse the window to 1.
	DecreaseHold time.Duration
	// Clock tells the time (default the wall clock).
	Clock gate.Clock
}

// PacerConfigError lists every invalid field of a PacerConfig.
type PacerConfigError struct {
	// Problems has one entry per invalid field: its name, its value and
	// what is legal.
	Problems []string
}

// Error implements the error interface.
func (e *PacerConfigError) Error() string {
	return "pgw/admission: invalid pacer config: " + strings.Join(e.Problems, "; ")
}

// PaceOutcome is what a paced call reports back to the Pacer.
type PaceOutcome uint8

// Pace outcomes. The zero value is PaceNeutral, so a forgotten field never grows
// or shrinks a window.
const (
	// PaceNeutral frees the slot and changes nothing: the call said nothing
	// about upstream capacity (a lost admission round, a caller error, a
	// cancellation, a 5xx, which is the breaker's business).
	PaceNeutral PaceOutcome = iota
	// PaceSuccess: the upstream accepted the call; a window's worth of
	// successes raises the window by one.
	PaceSuccess
	// PaceThrottled: the upstream answered 429; the window halves.
	PaceThrottled
)

// Pacer is the per-source AIMD concurrency window of one scope in one
// process (the chat scope's pacer): a source admits
// while its calls in flight are fewer than its window; the window grows by
// one after a window's worth of successes (additive increase) and halves on a
// throttle, at most once per DecreaseHold (multiplicative decrease), never
// below 1 nor above the ceiling.
//
// Use: TryAcquire before the call (Pick does, before it asks the quota); on
// the call's end exactly one Release with its outcome. The set of sources is fixed at
// construction; a source NewPacer was not given is not paced (TryAcquire
// always true). Safe for concurrent use; each source has its own lock.
type Pacer struct {
	cfg     PacerConfig
	sources map[string]*paceWindow // read-only after NewPacer
}

var _ Pacing = (*Pacer)(nil)

type paceWindow struct {
	mu           sync.Mutex
	window       int
	inFlight     int
	successes    int       // since the window last changed
	lastDecrease time.Time // zero: never
}

// NewPacer returns a pacer for sources (names must be unique). It fails with
// a *PacerConfigError naming every invalid field.
func NewPacer(sources []string, cfg PacerConfig) (*Pacer, error) {
	var bad []string
	if cfg.Ceiling < 0 {
		bad = append(bad, fmt.Sprintf("Ceiling=%d (legal: ≥ 1, or 0 for %d)", cfg.Ceiling, DefaultPacerCeiling))
	}
	if cfg.Ceiling == 0 {
		cfg.Ceiling = DefaultPacerCeiling
	}
	if cfg.Initial == 0 {
		cfg.Initial = cfg.Ceiling
	}
	if cfg.Initial < 1 || cfg.Initial > max(cfg.Ceiling, 1) {
		bad = append(bad, fmt.Sprintf("Initial=%d (legal: 1..Ceiling (%d), or 0 for Ceiling)", cfg.Initial, cfg.Ceiling))
	}
	if cfg.DecreaseHold < 0 {
		bad = append(bad, fmt.Sprintf("DecreaseHold=%v (legal: ≥ 0, or 0 for %v)", cfg.DecreaseHold, DefaultDecreaseHold))
	}
	if cfg.DecreaseHold == 0 {
		cfg.DecreaseHold = DefaultDecreaseHold
	}
	if cfg.Clock == nil {
		cfg.Clock = gate.SystemClock{}
	}
	p := &Pacer{cfg: cfg, sources: make(map[string]*paceWindow, len(sources))}
	for _, s := range sources {
		if _, dup := p.sources[s]; dup {
			bad = append(bad, fmt.Sprintf("source %q listed twice (legal: unique names)", s))
		}
		p.sources[s] = &paceWindow{window: cfg.Initial}
	}
	if len(bad) > 0 {
		return nil, &PacerConfigError{Problems: bad}
	}
	return p, nil
}

// Config returns the effective configuration, defaults filled in.
func (p *Pacer) Config() PacerConfig { return p.cfg }

// TryAcquire takes a slot of source's window, or reports false when the
// window is full (the admission's "adaptive_paced"). A true must be answered
// by exactly one Release (or Done).
func (p *Pacer) TryAcquire(source string) bool {
	w := p.sources[source]
	if w == nil {
		return true
	}
	w.mu.Lock()
	ok := w.inFlight < w.window
	if ok {
		w.inFlight++
	}
	w.mu.Unlock()
	return ok
}

// Release gives back a slot TryAcquire took and applies the call's outcome
// to the window. A Release without a slot held changes nothing.
func (p *Pacer) Release(source string, o PaceOutcome) {
	w := p.sources[source]
	if w == nil {
		return
	}
	var now time.Time
	if o == PaceThrottled {
		now = p.cfg.Clock.Now() // outside the lock: a clock may be slow
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight == 0 {
		return
	}
	w.inFlight--
	switch o {
	case PaceSuccess:
		w.successes++
		if w.successes >= w.window {
			w.successes = 0
			w.window = min(w.window+1, p.cfg.Ceiling)
		}
	case PaceThrottled:
		if !w.lastDecrease.IsZero() && now.Sub(w.lastDecrease) < p.cfg.DecreaseHold {
			return // the same congestion event: already halved for it
		}
		w.lastDecrease = now
		w.window = max(w.window/2, 1)
		w.successes = 0
	}
}

// Done is Release for a caller that knows only whether its call was
// throttled: throttled reports a 429 (PaceThrottled), anything else counts
// as a PaceSuccess. A slot given back without running a call (a lost round),
// or after a call that said nothing about capacity (a caller error, a 5xx),
// should use Release(source, PaceNeutral) instead.
func (p *Pacer) Done(source string, throttled bool) {
	if throttled {
		p.Release(source, PaceThrottled)
		return
	}
	p.Release(source, PaceSuccess)
}

// Window returns source's current window and calls in flight; (0, 0) for a
// source the pacer does not pace.
func (p *Pacer) Window(source string) (window, inFlight int) {
	w := p.sources[source]
	if w == nil {
		return 0, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.window, w.inFlight
}
