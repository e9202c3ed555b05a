package retry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// hedgeBucketCap is how many hedges the budget holds when full: a burst of
// slow calls may hedge this many at once before the share applies.
const hedgeBucketCap = 10.0

// HedgeTimer arms a hedge delay: it returns a channel that receives once d
// has passed, and a stop that disarms it. The default is time.NewTimer.
type HedgeTimer func(d time.Duration) (<-chan time.Time, func() bool)

func systemTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// hedging is a loop's hedge settings and budget; nil when the scope does not
// hedge.
type hedging struct {
	after    time.Duration // fixed delay; 0: none
	quantile float64       // adaptive delay's quantile; 0: none
	max      int           // hedges per call
	ratio    float64       // share of calls that may hedge
	timer    HedgeTimer

	mu     sync.Mutex
	tokens float64
}

func newHedging(sc config.ScopeSettings, timer HedgeTimer) *hedging {
	if !sc.HedgeEnabled() {
		return nil
	}
	if timer == nil {
		timer = systemTimer
	}
	return &hedging{
		after: sc.HedgeAfter, quantile: sc.HedgeQuantile, max: sc.HedgeMax,
		ratio: sc.HedgeBudget, timer: timer, tokens: hedgeBucketCap,
	}
}

// deposit adds one call's share to the budget.
func (h *hedging) deposit() {
	h.mu.Lock()
	h.tokens = min(h.tokens+h.ratio, hedgeBucketCap)
	h.mu.Unlock()
}

// take spends one hedge, or reports false when the budget is spent.
func (h *hedging) take() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens < 1 {
		return false
	}
	h.tokens--
	return true
}

// refund gives back a hedge that could not start.
func (h *hedging) refund() {
	h.mu.Lock()
	h.tokens = min(h.tokens+1, hedgeBucketCap)
	h.mu.Unlock()
}

// delay is how long an attempt on source may go without its first chunk
// before a hedge starts: the adaptive quantile of the source's recent times
// once it has enough of them, else the fixed delay; false for no hedge.
func (h *hedging) delay(lat *admission.Latency, source string) (time.Duration, bool) {
	if h.quantile > 0 {
		if q, ok := lat.Quantile(source, h.quantile); ok {
			return max(q, time.Millisecond), true
		}
	}
	return h.after, h.after > 0
}

// HedgeBudget returns the hedges the scope's budget holds now (at most 10;
// each call adds HEDGE_BUDGET, each hedge spends one), and false when the
// scope does not hedge.
func (l *Loop) HedgeBudget() (float64, bool) {
	if l.hedge == nil {
		return 0, false
	}
	l.hedge.mu.Lock()
	defer l.hedge.mu.Unlock()
	return l.hedge.tokens, true
}

// hedgeCall is one call's use of its loop's hedging; nil when the loop does
// not hedge.
type hedgeCall struct {
	h      *hedging
	call   *admission.Call
	est    int64
	demote bool
	fired  int // hedges started by this call
}

// newHedgeCall starts a call's hedging and adds its share to the budget.
func (l *Loop) newHedgeCall(call *admission.Call, est int64, demote bool) *hedgeCall {
	if l.hedge == nil {
		return nil
	}
	l.hedge.deposit()
	return &hedgeCall{h: l.hedge, call: call, est: est, demote: demote}
}

// firstChunk notes that the attempt delivered its first chunk: the time to
// it joins the source's latency, and the observer's record.
func (h *hold) firstChunk(l *Loop) {
	h.first = true
	if !h.start.IsZero() {
		l.adm.Latency().Observe(h.ticket.Source, l.clock.Now().Sub(h.start))
	}
	h.rep.firstChunk()
}

// noteLatency feeds an ended attempt to its source's latency: a success's
// time (unless its first chunk was noted already), a failure's time as a
// lower bound (boundSample). Cancellations, caller errors and panics say
// nothing about speed.
func (l *Loop) noteLatency(h *hold, outcome string) {
	l.noteLatencyAt(h, outcome, l.clock.Now())
}

// noteLatencyAt is noteLatency for an attempt that ended at now.
func (l *Loop) noteLatencyAt(h *hold, outcome string, now time.Time) {
	if h.start.IsZero() || h.first {
		return
	}
	d := now.Sub(h.start)
	switch outcome {
	case observe.OutcomeSuccess:
		l.adm.Latency().ObserveAt(h.ticket.Source, d, now)
	case observe.OutcomeFailure, observe.OutcomeFatal, observe.OutcomeThrottle:
		if l.boundSample(h.ticket.Source, d) {
			l.adm.Latency().ObserveBoundAt(h.ticket.Source, d, now)
		} else {
			l.adm.Latency().RaiseAt(h.ticket.Source, d, now)
		}
	}
}

// boundSample reports whether a failure's time d on source — a lower bound
// of the time the source would have taken to deliver — joins the source's
// samples, or only raises its EWMA.
//
// The samples are read as times to first chunk: a quantile of them is the
// adaptive hedge delay (and LatencyStats' P50 and P90). A bound at least as
// long as the quantile the window is read at lies on the same side of it as
// the true time it bounds, so as a sample it moves that quantile as the
// true time would: a timeout, or a failure after a long wait, keeps the
// slow tail in the window. A bound below it may stand for any time at all —
// a 5xx or a 429 in 2 ms on a source whose answers take 800 ms says nothing
// of how long they take — and as a sample it would read as a fast answer and
// pull the hedge delay down, hedging every call of a source whose errors
// come fast. It still raises the EWMA, which a bound can only raise. The
// quantile is the hedge delay the source has now when the scope hedges (the
// same line a lost attempt must have run past to count: a whole delay), the
// 90th percentile otherwise; while the window has none (fewer than 20
// samples and no fixed delay) a bound cannot be placed and joins nothing:
// the window starts from answers. Only a failure pays for the reading.
func (l *Loop) boundSample(source string, d time.Duration) bool {
	var at time.Duration
	var ok bool
	if l.hedge != nil {
		at, ok = l.hedge.delay(l.adm.Latency(), source)
	} else {
		at, ok = l.adm.Latency().Quantile(source, 0.9)
	}
	return ok && d >= at
}

// discarder is an attempt's value that holds the attempt's admission past
// its return (a chat stream): an attempt whose race it did not win gives it
// back through discard, Released, its attempt reported with outcome and err
// (hedge_lost and nil for a race another attempt won; canceled, closed or
// abandoned for one the call's end cut), without reporting the call's end.
type discarder interface {
	discard(outcome string, err error)
}

// discard gives back a stream whose hedge race it did not win: it is
// closed, its admission Released with the tokens it reported (none,
// usually), and its attempt reported with outcome and err. Nothing of it
// reaches the caller.
func (s *Stream) discard(outcome string, err error) {
	s.ending.Lock()
	defer s.ending.Unlock()
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	if s.st != nil {
		_ = s.st.Close()
	}
	usage := s.Usage()
	defer s.cancel()
	defer func() { _ = s.ticket.Done(s.ctx, admission.Result{Outcome: released, Tokens: lostTokens(usage)}) }()
	s.rep.end(outcome, err, usage)
}

// lostTokens is what a lost attempt is charged: what the upstream reported
// it used, else nothing.
func lostTokens(u transport.Usage) int64 {
	if n := settled(u); n > 0 {
		return n
	}
	return 0
}

// Leg states: a leg's result is either delivered to the race or, once the
// race declared the leg lost, given back by the leg itself.
const (
	legRunning int32 = iota
	legDelivered
	legLost
)

// leg is one attempt of a hedged race.
type leg struct {
	t      *admission.Ticket
	ar     *attemptReport
	hedge  bool // started by a hedge, not the round
	cancel context.CancelFunc
	state  atomic.Int32
	got    bool // the race received its result (the race's goroutine only)
	told   bool // its hedge event was reported (the race's goroutine only)
	// reported: the race reported the end of its attempt (finishLeg; the
	// race's goroutine only).
	reported bool
	// outran: a hedge delay ran out while it was the race's newest
	// attempt, so it ran at least that delay. ended: the outcome it is
	// reported with when the call's end cut the race — its ctx (canceled,
	// closed), another attempt's caller error (canceled) or a panic
	// (abandoned); empty for a hedge lost. The race writes both before it declares the
	// leg lost, which orders them before the leg reads them.
	outran bool
	ended  string
}

// legResult is what a leg delivers to its race.
type legResult[T any] struct {
	leg      *leg
	h        *hold
	v        T
	usage    transport.Usage
	class    Class
	err      error
	outcome  string
	panicked any // non-nil: the attempt panicked with it
	hasPanic bool
}

// attemptOrRace runs the round's attempt on t: alone when the call does not
// hedge, as a hedged race otherwise. source is the source of the attempt
// whose result it returns: t's, or in a race the one that failed last
// (the others that failed in it were demoted as they failed).
func attemptOrRace[T any](ctx context.Context, l *Loop, stall *StallClock, hc *hedgeCall, t *admission.Ticket,
	attempt attempter[T], rep *report, attempts *int, as *attemptState) (v T, class Class, source string, err error) {
	returned := false
	defer func() {
		if !returned {
			// A panic on the way — the attempt's, or an observer's as the
			// attempt starts or ends — keeps nothing of t's admission
			// (Done acts once: a give-back already made stands).
			_ = t.Done(ctx, admission.Result{Outcome: gate.Released})
		}
	}()
	v, class, source, err = attemptOrRaceOnce(ctx, l, stall, hc, t, attempt, rep, attempts, as)
	returned = true
	return v, class, source, err
}

// attemptOrRaceOnce is attemptOrRace without its guard against a panic.
func attemptOrRaceOnce[T any](ctx context.Context, l *Loop, stall *StallClock, hc *hedgeCall, t *admission.Ticket,
	attempt attempter[T], rep *report, attempts *int, as *attemptState) (v T, class Class, source string, err error) {
	if hc == nil {
		v, class, err = attemptOnce(ctx, l, stall, t, attempt, rep.beginAttempt(t, *attempts), as)
		return v, class, t.Source, err
	}
	if _, ok := hc.h.delay(l.adm.Latency(), t.Source); !ok || hc.fired >= hc.h.max {
		v, class, err = attemptOnce(ctx, l, stall, t, attempt, rep.beginAttempt(t, *attempts), as)
		return v, class, t.Source, err
	}
	stall.BeginAttempt()
	defer stall.EndAttempt()
	return race(ctx, l, hc, t, attempt, rep, attempts)
}

// race runs t's attempt and, each time the newest attempt goes a hedge delay
// without its first chunk (or answer), starts another on a source the call
// does not run yet — full admission, within the budget and HEDGE_MAX. The
// first attempt that delivers wins; every other is cancelled at once and
// gives back its admission as Released, whatever it would have become.
// Attempts that fail while another runs are ordinary failed attempts; the
// race ends with the last failure when none is left.
func race[T any](ctx context.Context, l *Loop, hc *hedgeCall, first *admission.Ticket, attempt attempter[T], rep *report, attempts *int) (T, Class, string, error) {
	var zero T
	out := make(chan legResult[T], 1+hc.h.max)
	var legs []*leg
	var received []legResult[T] // delivered to the race and not handed to the caller
	ended := false
	defer func() {
		if !ended {
			abandonRace(ctx, l, legs, received, out)
		}
	}()
	start := func(t *admission.Ticket, hedge bool) {
		lg := &leg{t: t, hedge: hedge, ar: rep.beginAttempt(t, *attempts)}
		src := l.source(t.Source)
		lctx := lg.ar.context(ctx) // the observer's attempt ctx (trace context)
		actx, cancel := context.WithCancel(lctx)
		if src.Timeout > 0 {
			actx, cancel = context.WithTimeout(lctx, src.Timeout)
		}
		actx, heard := listen(actx, l.adm, t.Source)
		lg.cancel = cancel
		legs = append(legs, lg)
		l.legs.Add(1)
		go runLeg(ctx, actx, l, lg, src, heard, attempt, out)
	}
	start(first, false)
	running := 1

	var timerC <-chan time.Time
	stop := func() bool { return false }
	// Each delay that runs out is one chance to hedge, used whether or not
	// a hedge could start: a call never polls for a source to hedge on.
	chances := hc.h.max - hc.fired
	arm := func(source string) {
		stop()
		timerC = nil
		if chances <= 0 || hc.fired >= hc.h.max || *attempts >= l.maxAttempts {
			return
		}
		if d, ok := hc.h.delay(l.adm.Latency(), source); ok {
			timerC, stop = hc.h.timer(d)
		}
	}
	arm(first.Source)
	defer func() { stop() }()

	// lose cancels every leg but keep; legs still running give themselves
	// back, and those that delivered meanwhile are drained and given back
	// here, reported as by (a lost hedge when empty). Every hedge among
	// them was wasted — or, when the call's end cut them (by is not
	// empty), canceled: none delivered, and none lost to another.
	lose := func(keep *leg, by string) {
		pending := 0
		for _, lg := range legs {
			if lg == keep {
				continue
			}
			lg.ended = by
			switch {
			case lg.state.CompareAndSwap(legRunning, legLost):
				lg.cancel()
				running--
			case !lg.got:
				pending++
			}
		}
		for ; pending > 0; pending-- {
			r := <-out
			r.leg.got = true
			running--
			giveBackLost(ctx, l, r)
		}
		event := observe.HedgeWasted
		if by != "" {
			event = observe.HedgeCanceled
		}
		for _, lg := range legs {
			if lg != keep {
				l.hedgeEnded(rep, lg, first.Source, event)
			}
		}
	}

	for {
		select {
		case <-timerC:
			timerC = nil
			chances--
			legs[len(legs)-1].outran = true
			l.fireHedge(ctx, rep, hc, first.Source, legs, attempts, start, &running)
			arm(legs[len(legs)-1].t.Source)
		case r := <-out:
			r.leg.got = true
			running--
			received = append(received, r)
			if r.hasPanic {
				// The panic ends the call: the other attempts are
				// abandoned with it, lost to no other.
				lose(r.leg, observe.OutcomeAbandoned)
				l.hedgeEnded(rep, r.leg, first.Source, observe.HedgeCanceled)
				finishLeg(ctx, l, r, admission.Result{Outcome: gate.Released})
				panic(r.panicked)
			}
			switch r.class {
			case Success:
				stop()
				lose(r.leg, "")
				if r.leg.hedge {
					r.leg.told = true
					l.hedgeEvent(rep, observe.HedgeWon, r.leg.t.Source, first.Source)
				}
				if rep != nil {
					rep.source = r.leg.t.Source
				}
				if r.h.kept {
					if rep != nil {
						rep.handed = true
					}
				} else {
					finishLeg(ctx, l, r, admission.Result{Outcome: gate.Success, Tokens: settled(r.usage)})
				}
				ended = true
				return r.v, Success, r.leg.t.Source, nil
			case CallerError, Canceled:
				stop()
				// The call ends with r's error and nobody won: every
				// other attempt is cut by that end, lost to no other —
				// canceled, or as the call's ctx ended r (canceled,
				// closed). A hedge that answered the caller error failed.
				by, event := observe.OutcomeCanceled, observe.HedgeWasted
				if r.class == Canceled {
					by, event = r.outcome, observe.HedgeCanceled
				}
				lose(r.leg, by)
				l.hedgeEnded(rep, r.leg, first.Source, event)
				finishLeg(ctx, l, r, resultOf(r.class))
				ended = true
				return zero, r.class, r.leg.t.Source, r.err
			}
			finishLeg(ctx, l, r, resultOf(r.class))
			l.hedgeEnded(rep, r.leg, first.Source, observe.HedgeWasted)
			if running == 0 {
				ended = true
				return zero, r.class, r.leg.t.Source, r.err
			}
			// Another attempt still runs: its answer is awaited; the
			// failure demotes its source for the rest of the call.
			if hc.demote {
				hc.call.Failed(r.leg.t.Source)
			}
			if timerC == nil {
				arm(legs[len(legs)-1].t.Source)
			}
		}
	}
}

// abandonRace gives back what a race that a panic ends holds (an
// observer's on a hedge event, an attempt's raised again): every leg still
// running is cancelled and gives itself back, reported abandoned (as does
// every leg lost before, as it was reported); every leg that delivered and
// was not received is given back here, reported abandoned; every leg
// received is given back Released, its stream discarded (abandoned), and
// its attempt reported abandoned unless the race reported it already (a
// winner whose hedge event panicked was not). Ticket.Done acts once, and a
// stream is discarded once, so a leg given back already is left as it is.
// No call's end is reported: the panic goes on to the caller.
//
// Every leg is cancelled, and every admission held here given back, before
// any attempt's end is reported (a stream's, as it is discarded, after its
// own report), and each give-back and report runs alone: an observer that
// panics again — on a record, or on a state change a give-back tells it
// of — stops none of the others. Such a panic is dropped, logged once, so
// that the caller gets the panic that ended the race.
func abandonRace[T any](ctx context.Context, l *Loop, legs []*leg, received []legResult[T], out <-chan legResult[T]) {
	logged := false
	alone := func(source string, f func()) {
		defer func() {
			if p := recover(); p != nil && !logged {
				logged = true
				l.log.Warn("pgw: a second panic, as a hedged race a panic ended gave back its attempts, is dropped; the first goes on to the caller",
					"scope", l.scope, "source", source, "panic", redactedPanic(p, l.source(source)))
			}
		}()
		f()
	}
	var late []legResult[T] // delivered, not received
	for _, lg := range legs {
		if lg.state.Load() != legLost {
			// Written before the leg is declared lost, as lose does; a
			// leg lost before may be reading it (only the race declares
			// a leg lost, so no other leg becomes lost meanwhile).
			lg.ended = observe.OutcomeAbandoned
		}
		if lg.state.CompareAndSwap(legRunning, legLost) {
			lg.cancel()
			continue
		}
		if lg.state.Load() == legDelivered && !lg.got {
			// Delivered, not yet received: its send does not block (the
			// channel holds every leg's result).
			r := <-out
			r.leg.got = true
			late = append(late, r)
		}
	}
	stream := func(r legResult[T]) (discarder, bool) {
		if !r.h.kept {
			return nil, false
		}
		d, ok := any(r.v).(discarder)
		return d, ok
	}
	for _, r := range append(late, received...) {
		if _, ok := stream(r); !ok {
			alone(r.leg.t.Source, func() {
				defer r.leg.cancel()
				_ = r.leg.t.Done(ctx, admission.Result{Outcome: gate.Released, Tokens: lostTokens(r.usage)})
			})
		}
	}
	for _, r := range late {
		alone(r.leg.t.Source, func() { giveBackLost(ctx, l, r) })
	}
	for _, r := range received {
		if d, ok := stream(r); ok {
			alone(r.leg.t.Source, func() { d.discard(observe.OutcomeAbandoned, nil) })
			continue
		}
		if !r.leg.reported {
			r.outcome, r.err = observe.OutcomeAbandoned, nil
			alone(r.leg.t.Source, func() { finishLeg(ctx, l, r, admission.Result{Outcome: gate.Released, Tokens: lostTokens(r.usage)}) })
		}
	}
}

// fireHedge starts one hedge when the budget and admission allow: a round
// over the sources the call does not run yet, which never waits.
func (l *Loop) fireHedge(ctx context.Context, rep *report, hc *hedgeCall, primary string, legs []*leg, attempts *int,
	start func(*admission.Ticket, bool), running *int) {
	if !hc.h.take() {
		l.hedgeEvent(rep, observe.HedgeSkippedBudget, "", primary)
		return
	}
	exclude := make([]string, len(legs))
	for i, lg := range legs {
		exclude[i] = lg.t.Source
	}
	t, _, err := hc.call.PickOther(ctx, hc.est, exclude)
	if err != nil || t == nil {
		hc.h.refund()
		l.hedgeEvent(rep, observe.HedgeSkippedNoSource, "", primary)
		return
	}
	started := false
	defer func() {
		if !started {
			// A report panicked before the hedge's leg held t.
			_ = t.Done(ctx, admission.Result{Outcome: gate.Released})
		}
	}()
	hc.fired++
	*attempts++
	l.hedgeEvent(rep, observe.HedgeFired, t.Source, primary)
	start(t, true)
	started = true
	*running++
}

// WaitHedges returns once every hedged attempt of the loop's calls has
// returned and, when it lost its race, given back its admission. A loser
// gives back on its own goroutine after its call returned; a gateway's
// Close waits for it here, after the calls, before it closes the writer.
// Calls that start meanwhile are not waited for.
func (l *Loop) WaitHedges() { l.legs.Wait() }

// hedgeEnded reports a hedge leg that did not win, once: wasted, or
// canceled when the call's end cut it.
func (l *Loop) hedgeEnded(rep *report, lg *leg, primary, event string) {
	if lg.hedge && !lg.told {
		lg.told = true
		l.hedgeEvent(rep, event, lg.t.Source, primary)
	}
}

// runLeg runs one attempt of a race on its own goroutine and delivers its
// result, unless the race declared the leg lost first: then the leg gives
// its admission back itself, Released.
func runLeg[T any](ctx, actx context.Context, l *Loop, lg *leg, src config.Source, heard *answers, attempt attempter[T], out chan<- legResult[T]) {
	h := &hold{ticket: lg.t, cancel: lg.cancel, rep: lg.ar, start: l.clock.Now()}
	r := legResult[T]{leg: lg, h: h, outcome: observe.OutcomePanic}
	defer l.legs.Done()
	defer func() {
		if p := recover(); p != nil {
			r.panicked, r.hasPanic = p, true
			if r.panicked == nil {
				r.panicked = errPanicked
			}
		}
		// Before any give-back: the budget hears the answer before the
		// slot frees, as for an attempt that runs alone.
		// What runs from here on runs on the leg's goroutine, which no
		// caller can recover on: an observer's panic (an advertised limit,
		// the lost attempt's record, a state change its give-back shows) is
		// recovered and logged (owned).
		l.owned(lg.t.Source, func() { heard.apply(ctx, l.adm, lg.t.Source) })
		if lg.state.CompareAndSwap(legRunning, legDelivered) {
			out <- r
			return
		}
		// The race is over for this leg.
		if r.hasPanic {
			l.log.Warn("pgw: an attempt that lost a hedge race panicked; the panic is dropped",
				"scope", l.scope, "source", lg.t.Source, "panic", redactedPanic(r.panicked, src))
		}
		l.owned(lg.t.Source, func() { giveBackLost(ctx, l, r) })
	}()
	r.v, r.usage, r.err = attempt.attempt(actx, &src, h)
	r.outcome = observe.OutcomeSuccess
	if o, ok := r.err.(errs.Originer); ok {
		// The error names where it came from when it ends the call.
		r.err = o.WithOrigin(l.scope, lg.t.Source)
	}
	if r.err == nil {
		r.class = Success
		return
	}
	heard.hearError(r.err)
	if ctx.Err() != nil {
		r.class, r.outcome, r.err = Canceled, endedOutcome(ctx), ctx.Err()
		return
	}
	if lg.state.Load() == legLost {
		// Cancelled by the race: the error is the cancellation's.
		r.class, r.outcome = Canceled, observe.OutcomeHedgeLost
		return
	}
	if d, ok := sourceHTTPError(r.err, src, l.clock.Now()); ok {
		// An SDK's error, described as an upstream HTTP failure as for an
		// attempt that runs alone: its Retry-After holds the source off.
		r.err = d
	}
	r.class = l.classify(r.err)
	if r.class == Success {
		r.class = CallerError
	}
	r.outcome = outcomeOf(r.class)
	if ra := RetryAfterOf(r.err); r.class == Throttle && ra > 0 {
		l.adm.HoldOff(lg.t.Source, ra)
	}
}

// finishLeg ends a delivered leg that did not hand its admission to a
// stream: latency, report, give-back, ctx.
func finishLeg[T any](ctx context.Context, l *Loop, r legResult[T], res admission.Result) {
	// Cancelled even when the observer panics on a state change the
	// give-back shows.
	defer r.leg.cancel()
	defer func() { _ = r.leg.t.Done(ctx, res) }()
	l.noteLatency(r.h, r.outcome)
	r.leg.reported = true
	r.leg.ar.end(r.outcome, r.err, r.usage)
}

// giveBackLost gives back a leg that lost its race: a stream it opened is
// discarded, otherwise its admission is Released with the tokens its
// upstream reported (none when it was cut short). It is never a failure of
// the source. A leg the call's ctx ended is reported as that end, and its
// time, the caller's patience, says nothing of the source.
func giveBackLost[T any](ctx context.Context, l *Loop, r legResult[T]) {
	outcome, err := observe.OutcomeHedgeLost, error(nil)
	if r.leg.ended != "" {
		outcome, err = r.leg.ended, ctx.Err()
	}
	if r.h.kept {
		if d, ok := any(r.v).(discarder); ok {
			d.discard(outcome, err)
			return
		}
	}
	// A lost leg's time is a lower bound of its source's, and the latency
	// window keeps plain samples: the quantile that is the adaptive hedge
	// delay reads each as a time. A leg that ran a whole hedge delay (a
	// delay ran out while it was the newest attempt) lies above that
	// quantile whatever its true time, so as a sample it sits on the right
	// side of it, and it keeps the slow tail the race cut short in the
	// window (and raises the EWMA, which a bound may only raise). A leg cut
	// before a delay ran out — a hedge that lost to the attempt it hedged —
	// would count as a fast answer of its source and pull the delay down:
	// it is no sample, nor is a leg the call's end cut.
	if outcome == observe.OutcomeHedgeLost && r.leg.outran && !r.h.start.IsZero() && !r.h.first {
		l.adm.Latency().ObserveBound(r.leg.t.Source, l.clock.Now().Sub(r.h.start))
	}
	defer r.leg.cancel()
	defer func() { _ = r.leg.t.Done(ctx, admission.Result{Outcome: gate.Released, Tokens: lostTokens(r.usage)}) }()
	r.leg.ar.end(outcome, err, r.usage)
}

// hedgeEvent reports a hedge to the call's observer, when it wants hedges,
// and with the call's ctx to a ContextObserver that wants them so; a call
// with no report (no observer enabled when it started) reports none.
func (l *Loop) hedgeEvent(rep *report, event, source, primary string) {
	if rep == nil {
		return
	}
	ho, _ := rep.o.(observe.HedgeObserver)
	if ho == nil && rep.ctx == nil {
		return
	}
	e := observe.Hedge{Scope: l.scope, Source: source, Primary: primary, Event: event, At: l.clock.Now()}
	if ho != nil {
		ho.ObserveHedge(e)
	}
	if rep.ctx != nil {
		if hc, ok := rep.tr.(observe.HedgeContextObserver); ok {
			hc.ObserveHedgeContext(rep.ctx, e)
		}
	}
}
