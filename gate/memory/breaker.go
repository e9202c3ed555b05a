package memory

import (
	"context"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/byname"
)

// Breaker is the in-process breaker gate. It follows the state machine and the
// RetryAfter contract of package gate exactly. It is safe for concurrent use;
// each source has its own lock, which the Closed success path and an Open
// rejection do not take, and neither allocates.
type Breaker struct {
	p     gate.Policy
	clock gate.Clock
	width int64 // window bucket width in ms; 0 when the window rule is off
	// records maps a source to its record. The set is never modified once
	// stored: a new source copies it under adding (sources are few and
	// added once), so a lookup is one atomic load and a read of the set,
	// without the interface hashing of sync.Map.
	records atomic.Pointer[recordSet]
	adding  sync.Mutex
}

var _ gate.ProviderGate = (*Breaker)(nil)

// NewBreaker returns a breaker gate for policy p (zero fields mean the
// defaults of gate.Policy). It fails when p is invalid.
func NewBreaker(p gate.Policy, opts ...Option) (*Breaker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.WithDefaults()
	o := buildOptions(opts)
	b := &Breaker{p: p, clock: o.clock}
	if p.Window > 0 {
		b.width = max(p.Window.Milliseconds()/windowBuckets, 1)
	}
	return b, nil
}

// Policy returns the effective policy, defaults filled in.
func (b *Breaker) Policy() gate.Policy { return b.p }

// record is one source's breaker state. Every field is guarded by mu; word
// mirrors the few facts the Closed success path needs, and openPhase those of an
// Open rejection, so that these paths can skip the lock (see unlock).
type record struct {
	mu          sync.Mutex
	word        atomic.Uint64 // gen<<2 | dirtyBit | closedBit, published at unlock
	state       gate.State
	seq         uint64 // last token handed out; generations and leases share it
	gen         uint64 // token of the current generation
	consecFails int
	probeOK     int
	probeFail   int // probe failures tolerated in this HalfOpen phase
	win         window
	cooldown    time.Duration // cooldown of the next or current Open phase
	openUntil   time.Time
	leases      []lease
	forced      gate.Force // operator override (force.go)
	// openPhase mirrors an Open phase with an end and no override, so that a
	// rejection before openUntil can skip the lock too; nil otherwise.
	// Published at unlock, before word.
	openPhase atomic.Pointer[openView]
}

// openView is an Open phase as the lock-free rejection path reads it. A
// view is never modified: a new phase or a pushed openUntil stores a new one.
type openView struct {
	gen   uint64
	until time.Time
}

const (
	// closedBit: state is Closed and no override holds it, so an answer
	// read from word alone (gen, Closed, ForceNone) is complete. A forced
	// Closed record takes the lock, which is rare and tells Forced.
	closedBit = 1 << 0
	dirtyBit  = 1 << 1 // consecFails > 0: a success must take the lock to reset it
)

// unlock publishes the record's word and releases mu. Every locked section
// ends here, so a lock-free reader of word sees the record as it was at some
// unlock: its reads linearise at that instant.
func (r *record) unlock() {
	if r.state == gate.Open && r.forced == gate.ForceNone && !r.openUntil.IsZero() {
		if v := r.openPhase.Load(); v == nil || v.gen != r.gen || !v.until.Equal(r.openUntil) {
			r.openPhase.Store(&openView{gen: r.gen, until: r.openUntil})
		}
	} else if r.openPhase.Load() != nil {
		r.openPhase.Store(nil)
	}
	w := r.gen << 2
	if r.state == gate.Closed && r.forced == gate.ForceNone {
		w |= closedBit
	}
	if r.consecFails > 0 {
		w |= dirtyBit
	}
	r.word.Store(w)
	r.mu.Unlock()
}

type lease struct {
	token uint64
	until time.Time
}

// recordSet is the breaker's records by source: m, copied to add one, and
// its index, which the hot path reads.
type recordSet struct {
	m   map[string]*record
	idx byname.Index[*record]
}

func (rs *recordSet) get(source string) *record {
	r, _ := rs.idx.Get(source)
	return r
}

// record returns the record of source, adding a fresh Closed one on first
// sight.
func (b *Breaker) record(source string) *record {
	if r := b.peek(source); r != nil {
		return r
	}
	b.adding.Lock()
	defer b.adding.Unlock()
	var cur map[string]*record
	if rs := b.records.Load(); rs != nil {
		cur = rs.m
	}
	if r := cur[source]; r != nil {
		return r // added meanwhile
	}
	fresh := &record{
		cooldown: b.p.Cooldown,
		// Room for the usual few leases only: HalfOpenProbes may be
		// math.MaxInt ("any number at once"), and more grow by append.
		leases: make([]lease, 0, min(b.p.HalfOpenProbes, 4)),
	}
	fresh.word.Store(closedBit)
	next := &recordSet{m: make(map[string]*record, len(cur)+1)}
	maps.Copy(next.m, cur)
	next.m[source] = fresh
	next.idx = byname.Of(next.m)
	b.records.Store(next)
	return fresh
}

// peek returns the record of source, or nil when the source was never seen
// (it reads as Closed).
func (b *Breaker) peek(source string) *record {
	if rs := b.records.Load(); rs != nil {
		return rs.get(source)
	}
	return nil
}

// TryEnter asks whether a call to source may run now. It never blocks on I/O.
// A ctx already done is refused with its error, and nothing is taken.
func (b *Breaker) TryEnter(ctx context.Context, source string) (gate.Decision, error) {
	if err := ctx.Err(); err != nil {
		return gate.Decision{}, gate.DoneError("TryEnter", source, err)
	}
	r := b.record(source)
	if w := r.word.Load(); w&closedBit != 0 {
		// The hot path takes no lock and reads no clock: Closed admission
		// depends on neither.
		return gate.Decision{Allowed: true, State: gate.Closed, Token: w >> 2, Generation: w >> 2}, nil
	}
	if v := r.openPhase.Load(); v != nil {
		// An Open rejection before openUntil changes nothing either: it
		// needs the clock, not the lock. At or past openUntil the locked
		// path moves the record to HalfOpen.
		if now := b.clock.Now(); now.Before(v.until) {
			return gate.Decision{State: gate.Open, RetryAfter: v.until.Sub(now), Generation: v.gen}, nil
		}
	}
	return b.tryEnterLocked(r), nil
}

// tryEnterLocked is TryEnter off the hot path, under the record's lock. It
// is a function of its own so that the hot path has no defer, and with it
// no result kept in memory.
func (b *Breaker) tryEnterLocked(r *record) gate.Decision {
	r.mu.Lock()
	defer r.unlock()
	if r.state == gate.Closed {
		return gate.Decision{Allowed: true, State: gate.Closed, Token: r.gen, Generation: r.gen, Forced: r.forced}
	}
	now := b.clock.Now()
	if r.state == gate.Open {
		if r.forced == gate.ForceOpen {
			// No certain end: the operator may lift it at any moment.
			return gate.Decision{State: gate.Open, Generation: r.gen, Forced: r.forced}
		}
		if now.Before(r.openUntil) {
			return gate.Decision{State: gate.Open, RetryAfter: r.openUntil.Sub(now), Generation: r.gen, Forced: r.forced}
		}
		r.state = gate.HalfOpen
		r.newGeneration()
		r.probeOK = 0
		r.probeFail = 0
		r.leases = r.leases[:0]
	}
	r.expireLeases(now)
	if len(r.leases) >= b.p.HalfOpenProbes || b.phaseFull(r) {
		// A probe is in flight: it may answer at any moment, so there is no
		// certain wait (never the lease length, which would hide a recovery).
		return gate.Decision{State: gate.HalfOpen, Generation: r.gen, Forced: r.forced}
	}
	r.seq++
	r.leases = append(r.leases, lease{token: r.seq, until: now.Add(b.p.ProbeTTL)})
	return gate.Decision{Allowed: true, State: gate.HalfOpen, Probe: true, Token: r.seq, Generation: r.gen, Forced: r.forced}
}

// Record reports the outcome of a call admitted by d. A stale decision (older
// generation, expired or replaced lease) changes nothing and returns
// Applied=false, except Fatal, which opens the breaker whenever it comes.
func (b *Breaker) Record(_ context.Context, source string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if !o.Valid() {
		return gate.Update{}, gate.ErrUnknownOutcome
	}
	r := b.record(source)
	fast := o == gate.Success && b.width == 0 && d.Allowed && !d.Probe && d.Token < 1<<62
	if fast && r.word.Load() == d.Token<<2|closedBit {
		// The hot path: a current Closed success with no failures to reset
		// and no window to feed changes nothing; no lock, no clock. The word
		// matched, so the generation is the token and there is no override.
		return gate.Update{Applied: true, State: gate.Closed, Generation: d.Token}, nil
	}
	return b.recordLocked(r, &d, o, fast), nil
}

// recordLocked is Record off the hot path, under the record's lock (a
// function of its own for the reason tryEnterLocked is).
func (b *Breaker) recordLocked(r *record, d *gate.Decision, o gate.Outcome, fast bool) gate.Update {
	r.mu.Lock()
	defer r.unlock()
	if fast && r.state == gate.Closed && d.Token == r.gen {
		r.consecFails = 0
		return gate.Update{Applied: true, State: gate.Closed, Generation: r.gen, Forced: r.forced}
	}
	now := b.clock.Now()
	if r.state == gate.HalfOpen {
		r.expireLeases(now)
	}
	if !d.Allowed || r.forced == gate.ForceOpen {
		return r.update(false, now)
	}
	if o == gate.Fatal && r.forced == gate.ForceClosed {
		o = gate.Failure // counted, never trips
	}
	if o == gate.Fatal {
		b.fatal(r, now)
		return r.update(true, now)
	}
	if !r.current(*d) {
		return r.update(false, now)
	}
	switch r.state {
	case gate.Closed:
		switch o {
		case gate.Success:
			r.consecFails = 0
			if b.width > 0 {
				r.win.add(now, b.width, false)
			}
		case gate.Failure:
			r.consecFails++
			if b.width > 0 {
				r.win.add(now, b.width, true)
			}
			if b.trips(r, now) && r.forced != gate.ForceClosed {
				r.open(now, r.cooldown)
			}
		}
	case gate.HalfOpen:
		switch o {
		case gate.Success:
			r.dropLease(d.Token)
			r.probeOK++
			if r.probeOK >= b.p.SuccessThreshold {
				r.close(b.p.Cooldown)
			}
		case gate.Failure:
			if b.toleratesProbeFailure(r) {
				r.dropLease(d.Token)
				r.probeFail++
				break
			}
			r.open(now, b.grown(r.cooldown))
		case gate.Released:
			r.dropLease(d.Token)
		}
	}
	return r.update(true, now)
}

// RetryAfter returns the minimum RetryAfter over sources (0 for none).
func (b *Breaker) RetryAfter(_ context.Context, sources []string) (time.Duration, error) {
	if len(sources) == 0 {
		return 0, nil
	}
	now := b.clock.Now()
	least := time.Duration(-1)
	for _, s := range sources {
		var ra time.Duration
		if r := b.peek(s); r != nil {
			r.mu.Lock()
			ra = r.remaining(now)
			r.mu.Unlock()
		}
		if least < 0 || ra < least {
			least = ra
		}
		if least == 0 {
			break
		}
	}
	return least, nil
}

// Snapshot reads source's record without moving it.
func (b *Breaker) Snapshot(_ context.Context, source string) (gate.Snapshot, error) {
	r := b.peek(source)
	if r == nil {
		return gate.Snapshot{State: gate.Closed, Cooldown: b.p.Cooldown}, nil
	}
	now := b.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := gate.Snapshot{
		State:               r.state,
		Generation:          r.gen,
		ConsecutiveFailures: r.consecFails,
		ProbeSuccesses:      r.probeOK,
		ProbeFailures:       r.probeFail,
		Cooldown:            r.cooldown,
		RetryAfter:          r.remaining(now),
		Forced:              r.forced,
	}
	if b.width > 0 && r.state == gate.Closed {
		s.WindowCalls, s.WindowFailures = r.win.counts(now, b.width)
	}
	if r.state == gate.HalfOpen {
		for _, l := range r.leases {
			if now.Before(l.until) {
				s.ProbesInFlight++
			}
		}
	}
	if r.state == gate.Open {
		s.OpenUntil = r.openUntil
	}
	return s, nil
}

// trips reports whether the Closed record r must open after a failure.
func (b *Breaker) trips(r *record, now time.Time) bool {
	if b.p.ConsecutiveFailures > 0 && r.consecFails >= b.p.ConsecutiveFailures {
		return true
	}
	if b.width == 0 {
		return false
	}
	calls, failed := r.win.counts(now, b.width)
	if calls < b.p.WindowMinCalls {
		return false
	}
	if b.p.WindowFailures > 0 && failed >= b.p.WindowFailures {
		return true
	}
	return b.p.WindowFailureRate > 0 && float64(failed) >= b.p.WindowFailureRate*float64(calls)
}

// phaseFull reports whether a HalfOpen phase has granted every probe
// Policy.HalfOpenCalls allows: leases in flight plus outcomes so far.
func (b *Breaker) phaseFull(r *record) bool {
	return b.p.HalfOpenCalls > 0 && len(r.leases)+r.probeOK+r.probeFail >= b.p.HalfOpenCalls
}

// toleratesProbeFailure reports whether one more probe failure still leaves
// SuccessThreshold reachable within Policy.HalfOpenCalls.
func (b *Breaker) toleratesProbeFailure(r *record) bool {
	return b.p.HalfOpenCalls > 0 && r.probeFail+1 <= b.p.HalfOpenCalls-b.p.SuccessThreshold
}

// grown is the cooldown after a failed probe: multiplied, capped.
func (b *Breaker) grown(c time.Duration) time.Duration {
	// In whole microseconds, the resolution of Redis TIME, computed as the
	// Redis scripts do (float µs × multiplier, rounded to the nearest µs) so
	// that both backends grow a cooldown alike (the model check compares
	// them). Rounding, not truncating: a product that is a whole number of
	// µs, like 330ms × 2.3, must not lose a µs to float noise.
	us := math.Floor(float64(c/time.Microsecond)*b.p.CooldownMultiplier + 0.5)
	if us >= float64(b.p.MaxCooldown/time.Microsecond) { // also catches overflow
		return b.p.MaxCooldown
	}
	return time.Duration(us) * time.Microsecond
}

func (b *Breaker) fatal(r *record, now time.Time) {
	switch r.state {
	case gate.Closed:
		r.open(now, r.cooldown)
	case gate.HalfOpen:
		r.open(now, b.grown(r.cooldown))
	case gate.Open:
		if until := now.Add(r.cooldown); until.After(r.openUntil) {
			r.openUntil = until
		}
	}
}

func (r *record) newGeneration() {
	r.seq++
	r.gen = r.seq
}

func (r *record) open(now time.Time, cooldown time.Duration) {
	r.state = gate.Open
	r.newGeneration()
	r.cooldown = cooldown
	r.openUntil = now.Add(cooldown)
	r.consecFails = 0
	r.probeOK = 0
	r.probeFail = 0
	r.win.reset()
	r.leases = r.leases[:0]
}

func (r *record) close(base time.Duration) {
	r.state = gate.Closed
	r.newGeneration()
	r.cooldown = base
	r.openUntil = time.Time{}
	r.consecFails = 0
	r.probeOK = 0
	r.probeFail = 0
	r.win.reset()
	r.leases = r.leases[:0]
}

// current reports whether d still speaks for r: a Closed admission of the
// current generation, or a probe whose lease still exists.
func (r *record) current(d gate.Decision) bool {
	if d.Probe {
		if r.state != gate.HalfOpen {
			return false
		}
		for _, l := range r.leases {
			if l.token == d.Token {
				return true
			}
		}
		return false
	}
	return r.state == gate.Closed && d.Token == r.gen
}

func (r *record) expireLeases(now time.Time) {
	kept := r.leases[:0]
	for _, l := range r.leases {
		if now.Before(l.until) {
			kept = append(kept, l)
		}
	}
	r.leases = kept
}

func (r *record) dropLease(token uint64) {
	for i, l := range r.leases {
		if l.token == token {
			r.leases = append(r.leases[:i], r.leases[i+1:]...)
			return
		}
	}
}

// remaining is the pinned RetryAfter of r: openUntil − now while Open and not
// yet due, 0 otherwise.
func (r *record) remaining(now time.Time) time.Duration {
	if r.state == gate.Open && now.Before(r.openUntil) {
		return r.openUntil.Sub(now)
	}
	return 0
}

func (r *record) update(applied bool, now time.Time) gate.Update {
	return gate.Update{Applied: applied, State: r.state, RetryAfter: r.remaining(now), Generation: r.gen, Forced: r.forced}
}
