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
// to the observer. The breaker is the truth: after each gate answer the state
// in it is compared with the last one seen; on a difference the gate's
// Snapshot is read once and decides whether the change is news. Only one
// read per source runs at a time and the next starts after its verdict, so
// the snapshots of one source are judged in the order they were read and its
// state changes are reported one after the other. The check costs a few atomic loads per answer; the Snapshot read —
// one gate operation, one Redis round trip — happens only when a gate answer
// shows another state, a new generation of a Closed record (an operator's
// override or reset) or a probe, on the goroutine that saw it, so that the
// events of one call keep their causal order.
type watch struct {
	scope   string
	breaker gate.ProviderGate
	clock   gate.Clock
	log     *slog.Logger
	obs     observe.Full // nil: log only
	names   []string     // the selector's sources, by index
	seen    []watched    // by index, as names
}

// watched is what this process last saw of one source's breaker record.
type watched struct {
	state atomic.Uint32 // gate.State last seen
	tok   atomic.Uint64 // token of the last Closed admission checked
	busy  atomic.Bool   // a reconcile is reading the gate

	mu     sync.Mutex
	forced gate.Force // override last seen
	counts observe.Counts
}

func newWatch(a *SourceAdmission, obs observe.Observer) *watch {
	w := &watch{
		scope:   a.scope,
		breaker: a.breaker,
		clock:   a.clock,
		log:     a.log,
		obs:     observe.AsFull(obs),
		names:   make([]string, len(a.sel.sources)),
		seen:    make([]watched, len(a.sel.sources)),
	}
	for i, s := range a.sel.sources {
		w.names[i] = s.Name
	}
	return w
}

// afterTryEnter checks a TryEnter answer for news.
func (w *watch) afterTryEnter(ctx context.Context, i int, d gate.Decision) {
	s := &w.seen[i]
	switch {
	case d.Allowed && !d.Probe:
		// A Closed admission's token is the record's generation: a token not
		// checked before means a transition (or an override) happened since.
		// A stale admission (decided before a concurrent Record opened the
		// record) is told apart by the Snapshot's generation.
		if gate.State(s.state.Load()) != gate.Closed || d.Token != s.tok.Load() {
			w.reconcile(ctx, i, d.Token)
		}
	case gate.State(s.state.Load()) != d.State:
		w.reconcile(ctx, i, 0)
	}
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
	if gate.State(s.state.Load()) != u.State {
		w.reconcile(ctx, i, 0)
	}
}

// reconcile reads the source's record and reports a change when the record
// is newer than what was seen and differs in state or override. Only one
// reconcile per source reads the gate at a time; a call that finds one
// running goes on, and a change it would have shown is reported by the next
// gate answer that shows it — late, never invented.
func (w *watch) reconcile(ctx context.Context, i int, tok uint64) {
	s := &w.seen[i]
	if !s.busy.CompareAndSwap(false, true) {
		return
	}
	defer s.busy.Store(false)
	name := w.names[i]
	snap, err := w.breaker.Snapshot(ctx, name)
	if err != nil {
		w.log.LogAttrs(ctx, slog.LevelDebug, "pgw: breaker snapshot failed; state change not checked",
			slog.String("scope", w.scope), slog.String("source", name), slog.Any("err", err))
		return
	}
	// Remember the Closed admission token that is now checked, so the
	// admissions that follow with the same token cost nothing.
	switch {
	case tok != 0:
		s.tok.Store(tok)
	case snap.State == gate.Closed:
		s.tok.Store(snap.Generation)
	}
	// No generation check: reads do not overlap (busy), so this snapshot is
	// newer than any judged before — and a record that expired in Redis
	// starts again at generation 0.
	s.mu.Lock()
	from, fromForced := gate.State(s.state.Load()), s.forced
	if snap.State == from && snap.Forced == fromForced {
		s.mu.Unlock()
		return
	}
	s.forced = snap.Forced
	s.state.Store(uint32(snap.State))
	counts := s.counts
	s.counts = observe.Counts{}
	s.mu.Unlock()

	ev := observe.StateChange{
		Scope: w.scope, Source: name,
		From: from, To: snap.State,
		Generation: snap.Generation,
		Forced:     snap.Forced,
		RetryAfter: snap.RetryAfter,
		Gate:       snap,
		Counts:     counts,
		At:         w.clock.Now(),
	}
	level := slog.LevelInfo
	if ev.To == gate.Open {
		level = slog.LevelWarn
	}
	w.log.LogAttrs(ctx, level, "pgw: breaker state changed",
		slog.String("scope", w.scope),
		slog.String("source", name),
		slog.String("from", from.String()),
		slog.String("state", snap.State.String()),
		slog.String("forced", snap.Forced.String()),
		slog.Uint64("generation", snap.Generation),
		slog.Duration("retry_after", snap.RetryAfter),
		slog.Uint64("failures", counts.Failures+counts.Fatal),
		slog.Uint64("consecutive_failures", counts.ConsecutiveFailures))
	if w.obs != nil {
		w.obs.ObserveStateChange(ev)
	}
}

// rejected reports one rejection of a Pick round.
func (w *watch) rejected(r Rejection, limit string, at time.Time) {
	if w.obs == nil {
		return
	}
	w.obs.ObserveRejection(observe.Rejection{
		Scope: w.scope, Source: r.Source, Reason: string(r.Reason), Limit: limit,
		RetryAfter: r.RetryAfter, At: at,
	})
}
