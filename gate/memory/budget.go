package memory

import (
	"context"
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Budget is the in-process gate.BudgetGate: the advertised rate-limit
// figures of each source, kept for this process alone. Safe for concurrent
// use.
type Budget struct {
	clock   gate.Clock
	mu      sync.Mutex
	sources map[string]*budgetSource
	// few are the first sources' records, found by comparing names
	// before the map is asked: a scope has a handful of sources, for which
	// that costs less than hashing. A record stays where it is for good (an
	// expired one is started afresh in place).
	few  [4]budgetEntry
	nfew int
}

type budgetEntry struct {
	name string
	s    *budgetSource
}

var _ gate.BudgetGate = (*Budget)(nil)

type budgetSource struct {
	req, tok budgetWindow
	// blind counts the admissions made while nothing was known, which
	// the first answer may not count yet; blindAt is the last of them.
	blind   int64
	blindAt int64
	// expires is when the record is forgotten (µs; 0: never written): a
	// window after the last reset it knows, as the Redis gate's key
	// expires, so that a window spent after its reset by calls that
	// brought no answer back does not hold the source off for good.
	expires int64
}

// blindLife is how long admissions made blind are remembered: longer than
// any sane call, so that the first answer still finds them.
const blindLife = int64(time.Minute / time.Microsecond)

// save notes a write of the record at now: it lives a window (at least
// a second) past the latest reset it knows, plus a second, and a minute
// while admissions made blind are counted.
func (s *budgetSource) save(now int64) {
	const second = int64(time.Second / time.Microsecond)
	ttl := second
	for _, w := range []*budgetWindow{&s.req, &s.tok} {
		ttl = max(ttl, max(w.end-now, 0)+max(w.span, second)+second)
	}
	if s.blind > 0 {
		ttl = max(ttl, blindLife)
	}
	s.expires = now + ttl
}

// source returns source's record at now, a new one when there is none or
// the last one expired.
func (b *Budget) source(source string, now int64) *budgetSource {
	s := b.find(source)
	switch {
	case s == nil:
		s = newBudgetSource()
		b.sources[source] = s
		if b.nfew < len(b.few) {
			b.few[b.nfew] = budgetEntry{name: source, s: s}
			b.nfew++
		}
	case s.expires > 0 && now >= s.expires:
		*s = *newBudgetSource()
	}
	return s
}

// find returns source's record, nil when there is none. Under b.mu.
func (b *Budget) find(source string) *budgetSource {
	for i := range b.nfew {
		if b.few[i].name == source {
			return b.few[i].s
		}
	}
	if b.nfew < len(b.few) {
		return nil // every record is among the few
	}
	return b.sources[source]
}

func (s *budgetSource) known() bool {
	return s.req.left >= 0 || s.tok.left >= 0
}

func newBudgetSource() *budgetSource {
	return &budgetSource{
		req: budgetWindow{limit: -1, left: -1},
		tok: budgetWindow{limit: -1, left: -1},
	}
}

// budgetWindow is one advertised window, times in µs of the gate's clock.
type budgetWindow struct {
	limit, left int64 // -1: unknown
	end         int64 // reset instant; 0: reset passed, next unknown
	prev        int64 // the reset last passed; 0: none
	span        int64 // the longest reset seen, µs: the window's length
}

// NewBudget returns an empty in-process budget gate.
func NewBudget(opts ...Option) *Budget {
	o := buildOptions(opts)
	return &Budget{clock: steadyClock(o.clock), sources: map[string]*budgetSource{}}
}

// roll moves w past its reset when now reached it.
func (w *budgetWindow) roll(now int64) {
	if w.end > 0 && now >= w.end {
		w.left, w.prev, w.end = w.limit, w.end, 0
	}
}

// refresh applies an answer's window a received at now; blind admissions
// made before anything was known are taken off a first figure.
func (w *budgetWindow) refresh(a gate.AdvertisedWindow, now, blind int64) {
	if a.Limit >= 0 {
		w.limit = a.Limit
	}
	if !a.Known() {
		return
	}
	end := now + max(a.Reset.Microseconds(), 1)
	w.roll(now)
	if w.end == 0 && w.prev > 0 && end <= w.prev+w.span/2 {
		return // a late answer of the window that just ended
	}
	w.span = max(w.span, end-now)
	switch {
	case w.left < 0:
		// The first figure: the answer counts its own call, perhaps not
		// the other blind ones still in flight.
		w.left = max(a.Remaining-max(blind-1, 0), 0)
	case a.Remaining < w.left:
		w.left = a.Remaining
	}
	w.end = max(w.end, end)
}

// short reports whether w's budget cannot hold cost (capped at the limit,
// so that a request larger than the whole window waits for a full one).
func (w *budgetWindow) short(cost int64) bool {
	if w.left < 0 {
		return false
	}
	if w.limit >= 0 {
		cost = min(cost, w.limit)
	}
	return w.left < cost
}

// Take reserves one request and estTokens tokens against source's
// advertised budget, or rejects with the time to the window's reset.
func (b *Budget) Take(_ context.Context, source string, estTokens int64) (gate.BudgetDecision, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.take(source, estTokens, b.clock.Now().UnixMicro()), nil
}

// takeAt is Take for a caller (the quota's AdmitBudget) that read its own
// clock at r, a moment ago (the zero reading: it read none). When that clock and the
// budget's both follow the system clock, r is what the budget's clock
// would have told then, and the budget reads no clock of its own; any other
// clock is read as Take reads it.
func (b *Budget) takeAt(source string, estTokens int64, r reading) gate.BudgetDecision {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.take(source, estTokens, r.microsOn(b.clock))
}

// take is Take at now (µs of the budget's clock), with b.mu held.
func (b *Budget) take(source string, estTokens int64, now int64) gate.BudgetDecision {
	s := b.source(source, now)
	s.req.roll(now)
	s.tok.roll(now)
	if !s.known() {
		if now-s.blindAt > blindLife {
			s.blind = 0
		}
		s.blind++
		s.blindAt = now
		s.save(now)
		return gate.BudgetDecision{Allowed: true}
	}
	for _, c := range []struct {
		w     *budgetWindow
		cost  int64
		limit string
	}{{&s.req, 1, gate.LimitAdvertisedRequests}, {&s.tok, estTokens, gate.LimitAdvertisedTokens}} {
		if c.w.short(c.cost) {
			var ra time.Duration
			if c.w.end > 0 {
				ra = time.Duration(c.w.end-now) * time.Microsecond
			}
			return gate.BudgetDecision{RetryAfter: ra, Limit: c.limit}
		}
	}
	if s.req.left >= 0 {
		s.req.left--
	}
	if s.tok.left >= 0 {
		s.tok.left = max(s.tok.left-estTokens, 0)
	}
	s.save(now)
	return gate.BudgetDecision{Allowed: true}
}

// Refresh applies what an answer advertised for source.
func (b *Budget) Refresh(_ context.Context, source string, a gate.Advertised) error {
	if !a.Requests.Known() && !a.Tokens.Known() && a.Requests.Limit < 0 && a.Tokens.Limit < 0 {
		return nil
	}
	now := b.clock.Now().UnixMicro()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.source(source, now)
	blind := s.blind
	if now-s.blindAt > blindLife {
		blind = 0
	}
	s.req.refresh(a.Requests, now, blind)
	s.tok.refresh(a.Tokens, now, blind)
	if s.known() {
		s.blind = 0
	}
	s.save(now)
	return nil
}

// Read returns source's budget as it stands.
func (b *Budget) Read(_ context.Context, source string) (gate.Advertised, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now().UnixMicro()
	s := b.find(source)
	if s == nil || s.expires > 0 && now >= s.expires || s.req.limit < 0 && s.tok.limit < 0 && !s.known() {
		return gate.Advertised{Requests: gate.UnknownWindow, Tokens: gate.UnknownWindow}, false, nil
	}
	s.req.roll(now)
	s.tok.roll(now)
	return gate.Advertised{Requests: s.req.view(now), Tokens: s.tok.view(now)}, true, nil
}

func (w *budgetWindow) view(now int64) gate.AdvertisedWindow {
	v := gate.AdvertisedWindow{Limit: w.limit, Remaining: w.left}
	if w.end > 0 {
		v.Reset = time.Duration(w.end-now) * time.Microsecond
	}
	return v
}
