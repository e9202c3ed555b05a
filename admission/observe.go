package admission

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
)

// watch follows what the gates answer for each source and reports breaker
// state changes (log line and observe.StateChange), gate rejections and waits
// to the observer.
//
// The breaker is the truth, and every answer carries what it needs to judge
// it: the record's generation, state and override at the moment of the
// answer (gate/doc.go "Generations"). The watch keeps the last of those it
// saw per source. An answer equal to it is no news — one atomic load and
// three compares, the cost of every Closed admission and success. An answer
// of a greater generation is a later state of the record: when its state or
// override differs, the change is reported from the answer itself (From the
// last state seen, To, Generation, Forced and RetryAfter the answer's), with
// no gate operation. So a call that waits out one cooldown makes its two
// gate queries (the rejection, the probe) and nothing more to report
// open → half_open → closed.
//
// Only where generations cannot order two answers does the watch read the
// record (Snapshot, one gate operation): an answer of a lower generation (a
// decision that raced a transition reported first, or a Redis record that
// expired while idle and started again at 0), an equal generation in another
// state or override, or an answer whose generation names another record
// than the last one seen (the top bit, redis.Failover's fallback). Only one
// judgement per source runs at a time, its report included, so the changes
// of one source are reported one after the other, each From the previous To,
// on the goroutine that saw them, in the causal order of its call. A call
// that finds one running goes on; a change it would have shown is reported
// by the next answer that shows it — late, never invented.
type watch struct {
	scope   string
	breaker gate.ProviderGate
	clock   gate.Clock
	log     *slog.Logger
	obs     observe.Full // nil: log only
	names   []string     // the selector's sources, by index
	seen    []watched    // by index, as names

	tr observe.ContextObserver // obs's context methods; nil: none
}

// recordBit is the bit of a generation that names the record it counts
// (gate/doc.go "Generations"): generations that differ in it do not compare.
const recordBit = uint64(1) << 63

// sight is what this process last saw of one source's breaker record. It is
// immutable once published.
type sight struct {
	gen    uint64
	state  gate.State
	forced gate.Force
}

// fresh is what the watch assumes before any answer: a Closed record at
// generation 0, as a source nobody has called reads.
var fresh = &sight{state: gate.Closed}

// watched is the watch's state for one source.
type watched struct {
	last atomic.Pointer[sight] // the last record seen; read without a lock
	busy atomic.Bool           // a judgement is running

	mu     sync.Mutex // guards counts
	counts observe.Counts
}

// answer is the part of a gate answer (Decision or Update) the watch judges.
type answer struct {
	gen        uint64
	state      gate.State
	forced     gate.Force
	retryAfter time.Duration
	// caused: this process's own operation made the answer's state (an
	// applied outcome, a granted probe), as opposed to seeing another's.
	caused bool
}

func newWatch(a *SourceAdmission, obs observe.Observer) *watch {
	w := &watch{
		scope:   a.scope,
		breaker: a.breaker,
		clock:   a.clock,
		log:     a.log,
		obs:     observe.AsFull(obs),
		tr:      observe.AsContext(obs),
		names:   make([]string, len(a.sel.sources)),
		seen:    make([]watched, len(a.sel.sources)),
	}
	for i, s := range a.sel.sources {
		w.names[i] = s.Name
		w.seen[i].last.Store(fresh)
	}
	return w
}

// afterTryEnter checks a TryEnter answer for news.
//
// A probe granted to this process is a transition it caused; any other news
// on a TryEnter answer (another process tripped or closed the record) was
// only observed.
func (w *watch) afterTryEnter(ctx context.Context, i int, d gate.Decision) {
	w.check(ctx, i, answer{gen: d.Generation, state: d.State, forced: d.Forced, retryAfter: d.RetryAfter,
		caused: d.Allowed && d.State == gate.HalfOpen})
}

// afterRecord counts an applied outcome and checks the answer for news.
func (w *watch) afterRecord(ctx context.Context, i int, o gate.Outcome, u gate.Update) {
	s := &w.seen[i]
	if u.Applied {
		s.mu.Lock()
		switch o {
		case gate.Success:
			s.counts.Successes++
			s.counts.ConsecutiveFailures = 0
		case gate.Failure:
			s.counts.Failures++
			s.counts.ConsecutiveFailures++
		case gate.Fatal:
			s.counts.Fatal++
			s.counts.ConsecutiveFailures++
		case gate.Released:
			s.counts.Released++
		}
		s.mu.Unlock()
	}
	// An applied outcome caused whatever change its answer shows.
	w.check(ctx, i, answer{gen: u.Generation, state: u.State, forced: u.Forced, retryAfter: u.RetryAfter, caused: u.Applied})
}

// check is on every answer's path: an answer equal to the last one seen
// costs one atomic load.
func (w *watch) check(ctx context.Context, i int, a answer) {
	if l := w.seen[i].last.Load(); a.gen == l.gen && a.state == l.state && a.forced == l.forced {
		return
	}
	w.judge(ctx, i, a)
}

// judge decides whether a differs from the last record seen by news: from
// the answer when its generation orders it, from the record otherwise.
func (w *watch) judge(ctx context.Context, i int, a answer) {
	s := &w.seen[i]
	if !s.busy.CompareAndSwap(false, true) {
		return
	}
	defer s.busy.Store(false)
	last := s.last.Load()
	if a.gen&recordBit == last.gen&recordBit && a.gen > last.gen {
		// A later state of the same record.
		w.adopt(ctx, i, last, &sight{gen: a.gen, state: a.state, forced: a.forced}, a.retryAfter, a.caused)
		return
	}
	// Generations cannot tell: an answer that raced a transition judged
	// first, or a record that started over? Read the record. No judgement
	// overlaps this one (busy), so the read is newer than every answer
	// judged before. (Skipping lower generations that show the state last
	// seen would be cheaper for a race, but after a restart would leave every
	// answer of the new record on this slow path.)
	name := w.names[i]
	snap, err := w.breaker.Snapshot(ctx, name)
	if err != nil {
		w.log.LogAttrs(ctx, slog.LevelDebug, "pgw: breaker snapshot failed; state change not checked",
			slog.String("scope", w.scope), slog.String("source", name), slog.Any("err", err))
		return
	}
	now := &sight{gen: snap.Generation, state: snap.State, forced: snap.Forced}
	caused := false
	if snap.Generation == a.gen&^recordBit && snap.State == a.state && snap.Forced == a.forced {
		caused = a.caused
		// The record is as the answer saw it: keep the answer's
		// generation, record bit included, so the answers that follow
		// from the same record compare without another read.
		now.gen = a.gen
	}
	w.adopt(ctx, i, last, now, snap.RetryAfter, caused)
}

// adopt makes now the last record seen and reports a change when its state
// or override differs from last. The caller holds busy.
//
// Only the process that caused a trip logs it as a warning; every other
// process sharing the record through Redis only observed it, and says so at
// Info — one outage, one warning, not one per process.
func (w *watch) adopt(ctx context.Context, i int, last, now *sight, retryAfter time.Duration, caused bool) {
	s := &w.seen[i]
	s.last.Store(now)
	if now.state == last.state && now.forced == last.forced {
		return
	}
	s.mu.Lock()
	counts := s.counts
	s.counts = observe.Counts{}
	s.mu.Unlock()

	name := w.names[i]
	ev := observe.StateChange{
		Scope: w.scope, Source: name,
		From: last.state, To: now.state,
		Generation: now.gen,
		Forced:     now.forced,
		RetryAfter: retryAfter,
		Counts:     counts,
		At:         w.clock.Now(),
	}
	level, msg := slog.LevelInfo, "pgw: breaker state changed"
	switch {
	case !caused:
		msg = "pgw: breaker state change observed (made by another process or an operator)"
	case ev.To == gate.Open:
		level = slog.LevelWarn
	}
	w.log.LogAttrs(ctx, level, msg,
		slog.String("scope", w.scope),
		slog.String("source", name),
		slog.String("from", ev.From.String()),
		slog.String("state", ev.To.String()),
		slog.String("forced", ev.Forced.String()),
		slog.Uint64("generation", ev.Generation),
		slog.Duration("retry_after", ev.RetryAfter),
		slog.Bool("observed", !caused),
		slog.Uint64("failures", counts.Failures+counts.Fatal),
		slog.Uint64("consecutive_failures", counts.ConsecutiveFailures))
	if w.obs != nil {
		w.obs.ObserveStateChange(ev)
	}
}

// rejected reports one rejection of a Pick round to obs.
func (w *watch) rejected(obs observe.Full, r Rejection, limit string, at time.Time) {
	obs.ObserveRejection(observe.Rejection{
		Scope: w.scope, Source: r.Source, Reason: string(r.Reason), Limit: limit,
		RetryAfter: r.RetryAfter, At: at,
	})
}
