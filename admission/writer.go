package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/ownpanic"
)

// Writer defaults.
const (
	// DefaultWriterQueue is WriterConfig.Queue's default.
	DefaultWriterQueue = 4096
	// DefaultWriterWorkers is WriterConfig.Workers' default.
	DefaultWriterWorkers = 8
	// DefaultWriterTimeout is WriterConfig.Timeout's default.
	DefaultWriterTimeout = time.Second
	// DefaultWriterLinger is WriterConfig.Linger's default.
	DefaultWriterLinger = time.Millisecond
)

// ErrWriterFull is wrapped by the error Ticket.Done returns when its
// outcome could not be queued: the writer's queue was full, or the writer
// was closed. The outcome is dropped; see Writer for what that costs.
var ErrWriterFull = errors.New("pgw/admission: outcome writer full or closed; outcome dropped")

// WriterConfig builds a Writer. Zero fields mean their defaults.
type WriterConfig struct {
	// Queue is how many outcomes may wait to be written (default 4096).
	Queue int
	// Workers is how many outcomes are written at once (default 8): each
	// worker is one goroutine, started by NewWriter, whatever the number of
	// calls.
	Workers int
	// Timeout bounds each write: one worker round's outcomes of a scope,
	// written together (default 1 s).
	Timeout time.Duration
	// Linger is how long a round may wait, once it holds an outcome, for
	// more to write with it in the same round trip: below Timeout (default
	// 1 ms, or a quarter of Timeout when that is less; negative: never
	// wait). Only a round of outcomes that cannot move a breaker
	// waits: an outcome that can (a probe's, a Failure, a Fatal) is written
	// at once, with whatever the round holds, and so is everything once
	// Close begins, or once an admission finds a source's in-flight slots
	// taken while the round holds one of them (Pick). Waiting turns a
	// steady trickle of outcomes, each of which would cost its own round
	// trip, into one pipeline per Linger, and leaves the store's single
	// thread free for the admissions callers wait for; it delays the release
	// of an in-flight slot, and what other processes see of a Closed
	// source's counts, by at most Linger.
	Linger time.Duration
	// Logger receives failed writes and drops, each kind at most once a
	// second (default slog.Default()), and the observers' panics the
	// workers recover.
	Logger *slog.Logger
	// Credentials returns a scope's source's credentials, redacted from
	// what the log shows of an observer's panic; nil: none known (echoed
	// credential headers are redacted all the same).
	Credentials func(scope, source string) []string
}

// WriterStats counts what a Writer did with the outcomes handed to it.
// Every outcome handed over (every Ticket.Done that reached the writer,
// ErrWriterFull included) is counted exactly once in Written, Failed,
// Dropped and Unwritten together, in any WriterStats Stats returns.
type WriterStats struct {
	// Written outcomes were given back to their gates without error.
	Written uint64
	// Failed outcomes were tried and a gate returned an error (Redis
	// unreachable, the write's timeout).
	Failed uint64
	// Dropped outcomes were never tried: the queue was full, the writer
	// closed, or Close's deadline passed before their turn.
	Dropped uint64
	// Queued outcomes wait to be written now: in the queue, or held by a
	// round that waits for more (WriterConfig.Linger).
	Queued int
	// Unwritten outcomes were handed over and are not yet Written, Failed
	// or Dropped: queued, held by a lingering round, or being written. 0
	// means every outcome handed over so far has reached its gates (or
	// been counted as failed or dropped).
	Unwritten int
}

// Writer gives back the outcomes of admitted attempts — the breaker Record
// and the quota permit's settle-and-release — off the callers' goroutines,
// so that a call returns as soon as its upstream answered, never later than
// its own deadline, however slow the gates' store is. One Writer serves every
// scope of a gateway (Config.Writer); gates that live in the process (memory,
// noop) need none.
//
// Outcomes wait in a bounded queue and a fixed set of workers writes them,
// each write bounded by WriterConfig.Timeout, so a slow or silent store costs
// queue space, not callers' time, and no goroutine is started per call. A
// worker takes what is queued (a round, up to 128 outcomes) and writes each
// scope's share as one batch: when the scope's quota gate is a gate.Concluder (both
// backends are), each outcome is one operation — on Redis one script doing
// the breaker Record and the quota Finish in the source's slot — and the
// batch one pipeline, one round trip.
//
// A round that holds only outcomes which cannot move a breaker may wait
// WriterConfig.Linger (1 ms) for more before it is written, so that outcomes
// arriving one by one still share round trips; an outcome that can move a
// breaker, a full round's worth queued, a full queue, an admission refused
// an in-flight slot that the round may hold, or Close ends the wait at once.
//
// A full queue drops the outcome (WriterStats.Dropped, and a log line at
// most once a second) instead of making the caller wait: a dropped or failed
// outcome is bounded by the leases the gates already keep for a process that
// vanished — an in-flight slot frees at its lease's end, a probe lease at
// ProbeTTL — and a breaker misses one success or failure count. The pacer's
// slot is not the writer's: Done returns it at once.
//
// Ordering: an outcome that may move the breaker — a probe's, a Failure, a
// Fatal — is written before the same admission asks the breaker about that
// source again: while one waits in the writer, Pick waits for it (bounded by
// the caller's ctx), so a process never sees its own probe as still in
// flight, nor retries a source its own failure just opened. The wait is for
// those queued before it began: the ones other calls give back meanwhile do
// not lengthen it. During an outage of the store (the breaker is a Degrader
// reporting one) Pick does not wait: the local fallback that answers then
// is not the gate the outcome goes to. An admission that its source refuses an in-flight slot
// while one of its own outcomes that frees one waits in the writer ends a
// lingering round, waits for that write and asks the source again. Other
// outcomes (a Closed admission's Success or Released) cannot move the state
// and are written in no particular order, as concurrent calls' outcomes
// always were;
// the observer and the state-change log line see an outcome's effect once
// every outcome of its round is written (an observer that starts a call may
// find the call waiting for one of them).
type Writer struct {
	q       chan pending
	timeout time.Duration
	linger  time.Duration
	// gather is held by the worker taking a round from q, so that one
	// round lingers at a time and the others do not split its outcomes
	// between them.
	gather sync.Mutex
	wake   chan struct{} // (1) a lingering round should end: see round
	held   atomic.Int32  // outcomes the lingering round holds (0: none lingers)
	hurry  atomic.Bool   // the next round written without lingering (flush)
	// handed counts the outcomes put was given, queued or refused. Each
	// is then counted once more, as written, failed or dropped, and
	// WriterStats.Unwritten is the difference: no outcome is ever counted
	// twice nor missed by a Stats that runs meanwhile, as a separate
	// counter of the unwritten, which each outcome must also leave, would.
	handed  atomic.Uint64
	closing chan struct{} // closed by Close
	log     *slog.Logger
	creds   func(scope, source string) []string // nil: none
	base    context.Context                     // cancelled when Close gives up waiting
	abandon context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.RWMutex // guards closed against sends on a closed q
	closed bool

	written, failed, dropped atomic.Uint64
	step                     func()       // test hook: called around each count (nil: none)
	lastDropLog, lastFailLog atomic.Int64 // unix ns
}

// pending is one outcome waiting to be written.
type pending struct {
	t   *Ticket
	r   Result
	ctx context.Context // the caller's, without its cancellation: values only
	// urgent: the outcome may move the breaker, and the admission asks
	// about its source again only once it is written: no round waits.
	urgent bool
}

// NewWriter validates cfg and starts the writer's workers. Close it when
// the gateway closes.
func NewWriter(cfg WriterConfig) (*Writer, error) {
	var bad []string
	if cfg.Queue < 0 {
		bad = append(bad, fmt.Sprintf("Queue=%d (legal: ≥ 1, or 0 for %d)", cfg.Queue, DefaultWriterQueue))
	}
	if cfg.Workers < 0 {
		bad = append(bad, fmt.Sprintf("Workers=%d (legal: ≥ 1, or 0 for %d)", cfg.Workers, DefaultWriterWorkers))
	}
	if cfg.Timeout < 0 {
		bad = append(bad, fmt.Sprintf("Timeout=%v (legal: > 0, or 0 for %v)", cfg.Timeout, DefaultWriterTimeout))
	}
	if timeout := cmp.Or(cfg.Timeout, DefaultWriterTimeout); timeout > 0 && cfg.Linger >= timeout {
		bad = append(bad, fmt.Sprintf("Linger=%v (legal: below Timeout (%v), 0 for %v, or negative for none)",
			cfg.Linger, timeout, defaultLinger(timeout)))
	}
	if len(bad) > 0 {
		return nil, &ConfigError{Problems: []string{"writer: " + strings.Join(bad, "; ")}}
	}
	if cfg.Queue == 0 {
		cfg.Queue = DefaultWriterQueue
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWriterWorkers
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultWriterTimeout
	}
	switch {
	case cfg.Linger == 0:
		cfg.Linger = defaultLinger(cfg.Timeout)
	case cfg.Linger < 0:
		cfg.Linger = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Writer{
		q: make(chan pending, cfg.Queue), timeout: cfg.Timeout, linger: cfg.Linger, log: cfg.Logger, creds: cfg.Credentials,
		wake: make(chan struct{}, 1), closing: make(chan struct{}),
	}
	w.base, w.abandon = context.WithCancel(context.Background())
	w.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go w.work()
	}
	return w, nil
}

// defaultLinger is WriterConfig.Linger's default for a write timeout:
// DefaultWriterLinger, or a quarter of the timeout when that is less.
func defaultLinger(timeout time.Duration) time.Duration {
	return min(DefaultWriterLinger, timeout/4)
}

// Timeout returns the bound of each write.
func (w *Writer) Timeout() time.Duration { return w.timeout }

// Stats returns the writer's counts so far. Each outcome handed over is
// counted exactly once in Written, Failed, Dropped and Unwritten together,
// however Stats and the writes interleave.
func (w *Writer) Stats() WriterStats {
	// The outcomes' last counts first, then what was handed over: one
	// counted in the first is handed over in the second, so Unwritten never
	// counts it again, and one counted after the first reads is in
	// Unwritten.
	s := WriterStats{
		Written: w.written.Load(),
		Failed:  w.failed.Load(),
		Dropped: w.dropped.Load(),
	}
	s.Unwritten = int(w.handed.Load() - s.Written - s.Failed - s.Dropped)
	s.Queued = len(w.q) + int(w.held.Load())
	return s
}

// count counts one outcome as written, failed or dropped (n: which).
func (w *Writer) count(n *atomic.Uint64) {
	w.hook()
	n.Add(1)
	w.hook()
}

// put queues t's outcome, or reports false when the queue is full or the
// writer closed (the outcome is counted as dropped).
func (w *Writer) put(ctx context.Context, t *Ticket, r Result) bool {
	// Read before the send: once queued, t is the writer's.
	urgent := t.ordered
	w.handed.Add(1) // before the send: a worker may count it at once
	w.mu.RLock()
	ok := false
	if !w.closed {
		select {
		case w.q <- pending{t: t, r: r, ctx: ctx, urgent: urgent}:
			ok = true
		default:
		}
	}
	w.mu.RUnlock()
	if ok && (urgent || w.full(len(w.q), int(w.held.Load()))) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	if !ok {
		w.count(&w.dropped)
		if w.rateOK(&w.lastDropLog) {
			w.log.Warn("pgw: outcome writer full or closed; outcomes dropped (their leases expire by themselves)",
				"scope", t.a.scope, "source", t.Source, "dropped_total", w.dropped.Load())
		}
	}
	return ok
}

// flush ends the wait of a lingering round, or keeps the next round from
// lingering (an admission was refused an in-flight slot that one of its
// outcomes in the writer holds).
func (w *Writer) flush() {
	// Whether a round lingers now or is about to: hurry keeps the next one
	// from lingering, the wake ends the one that does.
	w.hurry.Store(true)
	if w.held.Load() == 0 {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// rateOK reports whether a log line of the kind last stamps may go out: at
// most one a second.
func (w *Writer) rateOK(last *atomic.Int64) bool {
	now := time.Now().UnixNano()
	prev := last.Load()
	return now-prev >= int64(time.Second) && last.CompareAndSwap(prev, now)
}

// hook calls the test hook, if any.
func (w *Writer) hook() {
	if w.step != nil {
		w.step()
	}
}

// maxBatch bounds how many queued outcomes one worker writes in one round.
const maxBatch = 128

// full reports whether a lingering round that holds held outcomes, with
// queued more in the queue, should be written now: together they make a
// full round, or the queue can take no more (a Queue shorter than a round),
// so that waiting on would drop the next outcome while the workers idle.
func (w *Writer) full(queued, held int) bool {
	return queued+held >= maxBatch || queued >= cap(w.q)
}

// work writes outcomes in rounds (round), and the round's outcomes of each
// scope as one batch — on Redis one script per outcome, all in one
// pipeline — bounded by the write timeout.
func (w *Writer) work() {
	defer w.wg.Done()
	batch := make([]pending, 0, maxBatch)
	var cs []gate.Conclusion
	var timer *time.Timer
	if w.linger > 0 {
		timer = time.NewTimer(w.linger)
		timer.Stop()
	}
	var gs []given
	for {
		var open bool
		batch, open = w.round(batch[:0], timer)
		if len(batch) == 0 {
			if !open {
				return
			}
			continue
		}
		if w.base.Err() != nil {
			for _, p := range batch {
				w.count(&w.dropped)
				p.t.a.probeWritten(p.t)
				p.t.a.slotWritten(p.t)
			}
			continue
		}
		// One batch per scope, in queue order within each.
		for len(batch) > 0 {
			a := batch[0].t.a
			n := 0
			rest := batch[:0:0]
			for _, p := range batch {
				if p.t.a == a {
					batch[n] = p
					n++
				} else {
					rest = append(rest, p)
				}
			}
			cs, gs = w.write(a, batch[:n], cs, gs)
			batch = append(batch[:0], rest...)
		}
		w.tell(gs)
		clear(gs)
		gs = gs[:0]
	}
}

// given is an outcome a round wrote (or dropped), kept until the round's
// end: see tell.
type given struct {
	a        *SourceAdmission
	source   string
	idx      int
	values   context.Context // the caller's
	o        gate.Outcome
	u        gate.Update
	recorded bool  // the breaker answered u: the observer hears of it
	err      error // the write failed
	dropped  bool  // Close gave up before its turn
}

// tell ends a round once every outcome of it is written: it tells the
// observers what the breakers answered, then counts the outcomes. Not
// before: an observer runs on the worker's goroutine and may start a call
// (a callback that calls again when it hears a breaker open or close), and
// that call's Pick may wait for an outcome of this very round (Pick's
// ordering: a Failure of the source, in this scope or another), which this
// worker alone would write — after the observer returned. No caller can
// recover a panic of the observer here: each outcome is told alone, and a
// panic is recovered and logged (ownpanic.Run).
func (w *Writer) tell(gs []given) {
	ctx, cancel := context.WithTimeout(w.base, w.timeout)
	for _, g := range gs {
		if g.recorded {
			ownpanic.Run(w.log, func(p any) string { return w.redact(p, g.a.scope, g.source) }, func() {
				g.a.w.afterRecord(valuesOf{Context: ctx, values: g.values}, g.idx, g.o, g.u)
			}, g.a.scope, g.source)
		}
	}
	cancel()
	for _, g := range gs {
		switch {
		case g.dropped:
			w.count(&w.dropped)
		case g.err != nil:
			w.count(&w.failed)
			if w.rateOK(&w.lastFailLog) {
				w.log.Warn("pgw: writing an outcome failed", "scope", g.a.scope, "source", g.source,
					"err", g.err, "failed_total", w.failed.Load())
			}
		default:
			w.count(&w.written)
		}
	}
}

// round takes the next round of outcomes into batch: it waits for one and
// takes whatever else is queued (up to maxBatch); while the round holds only
// outcomes that cannot move a breaker, it then sleeps up to the linger
// (timer) and takes what came meanwhile. The sleep is not woken by each
// outcome put — that would cost a goroutine switch per outcome, the very
// work lingering saves — only by an urgent one, a full round's worth
// queued (or a full queue), an admission refused a slot (flush), or Close
// (w.wake, w.hurry, w.closing). It reports false once the queue is closed;
// a round taken then is still returned, to be written.
func (w *Writer) round(batch []pending, timer *time.Timer) ([]pending, bool) {
	w.gather.Lock()
	defer w.gather.Unlock()
	p, ok := <-w.q
	if !ok {
		return batch, false
	}
	// A wake left from an earlier round is stale: the outcome it was for
	// has been taken. Dropped before taking what is queued, so a wake sent
	// after that is kept.
	select {
	case <-w.wake:
	default:
	}
	batch = append(batch, p)
	batch, urgent, open := w.take(batch, p.urgent)
	if urgent || !open || timer == nil || len(batch) == maxBatch || w.hurry.Swap(false) {
		return batch, open
	}
	// Outcomes put from now on see what the round holds and wake it once
	// a full round's worth is there, or the queue is full; those put
	// before were not told, so the queue is looked at again first.
	w.held.Store(int32(len(batch)))
	defer w.held.Store(0)
	if w.full(len(w.q), len(batch)) || w.hurry.Swap(false) {
		batch, _, open = w.take(batch, false)
		return batch, open
	}
	timer.Reset(w.linger)
	select {
	case <-timer.C:
	case <-w.wake:
		timer.Stop()
		w.hurry.Store(false)
	case <-w.closing:
		timer.Stop()
	}
	batch, _, open = w.take(batch, false)
	return batch, open
}

// take adds to batch what is queued, without waiting, up to maxBatch. It
// reports whether the round now holds an urgent outcome (given urgent: it
// held one before) and false once the queue is closed.
func (w *Writer) take(batch []pending, urgent bool) ([]pending, bool, bool) {
	for len(batch) < maxBatch {
		select {
		case p, ok := <-w.q:
			if !ok {
				return batch, urgent, false
			}
			batch = append(batch, p)
			urgent = urgent || p.urgent
		default:
			return batch, urgent, true
		}
	}
	return batch, urgent, true
}

// write gives back one scope's outcomes: in one Conclude when the scope's
// quota gate is a gate.Concluder that combines with its breaker, else one
// by one. It appends what became of each to gs, for the round's end (tell).
// cs is scratch space, returned for reuse.
func (w *Writer) write(a *SourceAdmission, ps []pending, cs []gate.Conclusion, gs []given) ([]gate.Conclusion, []given) {
	ctx, cancel := context.WithTimeout(w.base, w.timeout)
	defer cancel()
	wctx := valuesOf{Context: ctx, values: ps[0].ctx}
	start := len(gs)
	for _, p := range ps {
		gs = append(gs, given{a: a, source: p.t.Source, idx: p.t.idx, values: p.ctx})
	}
	out := gs[start:]
	concluded := false
	if a.concluder != nil {
		cs = cs[:0]
		for _, p := range ps {
			o := p.r.Outcome
			if !o.Valid() {
				o = gate.Released
			}
			cs = append(cs, gate.Conclusion{
				Source: p.t.Source, Decision: p.t.Decision, Outcome: o,
				Permit: p.t.permit, HasPermit: p.t.hasPermit, Tokens: p.r.Tokens,
			})
		}
		if concluded = a.concluder.Conclude(wctx, a.breaker, cs); concluded {
			for i, p := range ps {
				c, g := &cs[i], &out[i]
				if c.Err != nil {
					g.err = fmt.Errorf("pgw/admission: scope %q: giving back source %q: %w", a.scope, p.t.Source, c.Err)
					continue
				}
				g.o, g.u, g.recorded = c.Outcome, c.Update, true
			}
		}
	}
	if !concluded {
		for i, p := range ps {
			g := &out[i]
			if w.base.Err() != nil {
				g.dropped = true // Close gave up before its turn
				continue
			}
			g.o, g.u, g.recorded, g.err = p.t.giveBackGates(valuesOf{Context: ctx, values: p.ctx}, p.r, true)
		}
	}
	// The breaker has heard them (or never will): the admission may ask
	// again before the observer hears of them (it may ask itself).
	for _, p := range ps {
		a.probeWritten(p.t)
		a.slotWritten(p.t)
	}
	return cs, gs
}

// valuesOf is a write's context: the writer's deadline and cancellation,
// the caller's values (trace ids for the store's instrumentation).
type valuesOf struct {
	context.Context
	values context.Context
}

// Value looks the key up in the caller's context; writeKey is the
// writer's own.
func (v valuesOf) Value(key any) any {
	if key == (writeKey{}) {
		return true
	}
	return v.values.Value(key)
}

type writeKey struct{}

// IsWrite reports whether ctx is the context of a Writer's write: what a
// gate's instrumentation (a go-redis hook) sees for the give-backs the
// writer makes, as opposed to the operations on a caller's path.
func IsWrite(ctx context.Context) bool {
	v, _ := ctx.Value(writeKey{}).(bool)
	return v
}

// Close stops taking outcomes and writes those queued, each within the
// write timeout, until ctx ends; outcomes still queued then are dropped and
// the writes in progress cancelled. It returns when every worker has
// stopped — within ctx's deadline plus the time a cancelled write takes to
// return — with ctx's error when outcomes were dropped. Close is idempotent.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.q)
		close(w.closing)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		w.abandon()
		return nil
	case <-ctx.Done():
		w.abandon()
		<-done
		return fmt.Errorf("pgw/admission: closing the outcome writer: %w (%d outcomes dropped in all)", ctx.Err(), w.dropped.Load())
	}
}

// redact is an observer's panic p, recovered as the writer told it of an
// outcome of scope's source, with the source's credentials redacted.
func (w *Writer) redact(p any, scope, source string) string {
	var creds []string
	if w.creds != nil {
		creds = w.creds(scope, source)
	}
	return ownpanic.Redact(creds)(p)
}
