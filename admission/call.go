package admission

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
)

// StallBudget is a call's view of its stall budget; retry's
// StallClock implements it.
type StallBudget interface {
	// Stalled reports whether the call's stall time exceeds the window and
	// no call of its scope delivered a success within the window.
	Stalled() bool
	// Remaining is the stall time left before the window is spent; ≤ 0 once
	// it is.
	Remaining() time.Duration
}

// Call is one governed call's use of a SourceAdmission: it carries the call's
// in-call failures (demotion), its stall budget and whether it is waiting, so
// that a wait logs one line when it starts and one when it ends however many
// naps it takes. A Call belongs to one call and is not safe for concurrent
// use; the SourceAdmission behind it is.
type Call struct {
	a       *SourceAdmission
	stall   StallBudget
	fails   map[string]int
	waiting bool
	since   time.Time
	naps    int
	kind    string            // the wait's reason: circuit_open or quota_full
	hint    time.Duration     // the wait's expected length at its start
	reasons map[string]string // each source's rejection at the wait's start

	wctx context.Context // the waiting call's ctx, for a ContextObserver

	// obs and tr report the call's rejections and waits when own (Observe);
	// without, the admission's observer does.
	obs observe.Full
	tr  observe.ContextObserver
	own bool

	sib       *Siblings // the split call c is a part of; nil: none
	sibMark   uint64    // sib's give-backs when the last round began
	slotsFull bool      // the last round was refused some source's in-flight slots
}

// NewCall starts a call. stall bounds its waiting; nil means unbounded (never
// stalled), for tests and callers that bound the call with ctx alone.
func (a *SourceAdmission) NewCall(stall StallBudget) *Call {
	return &Call{a: a, stall: stall}
}

// Init starts c as NewCall does, for a Call that lives in a larger per-call
// struct of its caller (or is reused for another call once the last one
// is over): everything of a previous call is forgotten.
func (c *Call) Init(a *SourceAdmission, stall StallBudget) {
	if !c.clean() {
		*c = Call{}
	}
	c.a, c.stall = a, stall
	c.obs, c.tr, c.own = nil, nil, false
}

// Observe makes o the observer of the call's rejections and waits, and tr
// (o as a ContextObserver, or nil) the one that gets each wait's end with
// the call's ctx: the view of the scope's observer that the call found
// enabled when it started (observe.ForCall). A nil o reports none of them.
// A Call not told so reports to its admission's observer.
func (c *Call) Observe(o observe.Full, tr observe.ContextObserver) {
	c.obs, c.tr, c.own = o, tr, true
}

// observer is the observer of c's rejections and waits.
func (c *Call) observer() observe.Full {
	if c.own {
		return c.obs
	}
	return c.a.w.obs
}

// clean reports whether everything of c but its admission and stall budget
// is zero, as a Call that never waited or failed leaves it: Init then sets
// those two alone, rather than clearing the whole struct (under the GC's
// write barrier, which a struct with pointers pays for every word).
func (c *Call) clean() bool {
	return c.fails == nil && !c.waiting && c.since.IsZero() && c.naps == 0 &&
		c.kind == "" && c.hint == 0 && c.reasons == nil && c.wctx == nil && c.sib == nil && c.sibMark == 0 && !c.slotsFull
}

// Failed demotes source for the rest of the call: later rounds try it after
// every source that has not failed (in-call demotion; every loop of package
// retry calls it after a failed attempt).
func (c *Call) Failed(source string) {
	if c.fails == nil {
		c.fails = make(map[string]int, 2)
	}
	c.fails[source]++
}

// Pick runs one admission round with the call's demotions; see
// SourceAdmission.Pick. A ticket (or an error) after a wait ends the wait.
func (c *Call) Pick(ctx context.Context, estTokens int64) (*Ticket, Rejections, error) {
	return c.PickInto(ctx, estTokens, nil)
}

// PickInto is Pick for a caller that allocates its attempt's state in one
// piece: the ticket it returns may be into (nil: always a new one). into
// may be spent on a ticket the round gave back again, so a round that
// returns no ticket, or one that is not into, leaves into unusable for
// another round.
func (c *Call) PickInto(ctx context.Context, estTokens int64, into *Ticket) (*Ticket, Rejections, error) {
	if c.sib != nil {
		c.sibMark = c.sib.beginPick()
	}
	c.slotsFull = false
	t, rej, err := c.a.pick(ctx, c.observer(), c.fails, estTokens, nil, into, &c.slotsFull)
	if c.sib != nil {
		if t != nil {
			t.sib = c.sib // its Done tells the siblings
		}
		c.sib.endPick(t != nil)
	}
	if c.waiting {
		switch {
		case err != nil:
			c.leave(closedCause(ctx, err), "")
		case t != nil:
			c.leave(nil, t.Source)
		}
	}
	return t, rej, err
}

// PickOther runs one admission round like Pick that passes over the sources
// in exclude: a hedge's round, which must land on a source its call does not
// already run. It never waits and never ends a wait: a nil Ticket means no
// other source may run now.
func (c *Call) PickOther(ctx context.Context, estTokens int64, exclude []string) (*Ticket, Rejections, error) {
	return c.a.pick(ctx, c.observer(), c.fails, estTokens, exclude, nil, nil)
}

// OnNoRunnable decides what the call does after a round that admitted no
// source. Dispatch is by rejection reason, so a breaker wait is
// never reported as a quota one:
//
//	every rejection a gate one (cooldown, circuit_open):
//	  CIRCUIT_OPEN=fail_fast → *CircuitOpenError, RetryAfter = earliest source's
//	  CIRCUIT_OPEN=wait      → hint = earliest source's RetryAfter (0: all HalfOpen)
//	otherwise (some rate_limited, retry_after or adaptive_paced):
//	  QUOTA_FULL=fail_fast   → *AllSourcesExhausted{Reason: "quota_exhausted"},
//	                           RetryAfter = earliest source's (0: unknown)
//	  QUOTA_FULL=wait        → hint = earliest RetryAfter (0: unknown)
//
// A waiting call that is stalled gets *AllSourcesExhausted{Reason: "stalled"}
// with every source's reason; otherwise OnNoRunnable sleeps Nap(hint) and
// returns nil for the next round, or ctx.Err() at once when ctx ends first.
// It holds nothing while it sleeps.
//
// The RetryAfter of each rejection is what its stage reported in this very
// round: for circuit_open the breaker's own pinned RetryAfter, for cooldown
// the memo's remaining time (fed by the breaker, or longer after an
// upstream's Retry-After). Their minimum is the gate's RetryAfter(sources) at
// that instant, or later only where this process would not admit the source
// earlier anyway — so the hint costs no extra gate query, and a waiting call
// asks the gate about once per cooldown.
func (c *Call) OnNoRunnable(ctx context.Context, rej Rejections) error {
	a := c.a
	hint := rej.earliest()
	allGate := rej.AllGate()
	switch {
	case allGate && a.circuitOpen == FailFast:
		err := &errs.CircuitOpenError{Scope: a.scope, Sources: rej.Sources(), RetryAfter: hint}
		c.leave(err, "")
		return err
	case !allGate && a.quotaFull == FailFast:
		if c.sib != nil && c.slotsFull {
			// A part refused slots its siblings may hold: it waits for
			// one of them, and fails only when none holds any.
			again, err := c.sib.await(ctx, c.sibMark)
			if err != nil {
				c.leave(closedCause(ctx, err), "")
				return err
			}
			if again {
				return nil
			}
		}
		err := &errs.AllSourcesExhausted{Scope: a.scope, Reason: errs.ReasonQuotaExhausted, Reasons: rej.Map(), RetryAfter: hint}
		c.leave(err, "")
		return err
	}
	stallLeft := time.Duration(1<<63 - 1)
	if c.stall != nil {
		if c.stall.Stalled() {
			err := &errs.AllSourcesExhausted{Scope: a.scope, Reason: errs.ReasonStalled, Reasons: rej.Map(), RetryAfter: hint}
			c.leave(err, "")
			return err
		}
		// The horizon, not the call's own budget: while its scope delivers
		// the call cannot be stalled before it, so waking at the end of its
		// own budget would only poll a gate whose answer is certain.
		stallLeft = c.stallLeft()
	}
	// A certain wait that ends past the caller's deadline or the stall
	// budget cannot end in an admission: fail now, as fail_fast would.
	why, untilDeadline := c.unreachable(ctx, hint, stallLeft)
	if why != "" {
		return c.giveUp(ctx, why, rej, hint, untilDeadline, allGate)
	}
	nap := fitNap(Nap(hint, a.poll, stallLeft, a.rand()), hint, untilDeadline)
	c.naps++
	if !c.waiting {
		c.waiting = true
		c.since = a.clock.Now()
		c.kind, c.hint = "quota_full", hint
		if allGate {
			c.kind = "circuit_open"
		}
		switch {
		case c.own:
			if c.tr != nil {
				c.wctx = ctx
			}
		case a.w.tr != nil && observe.Enabled(a.w.tr):
			c.wctx = ctx
		}
		reasons := rej.Map()
		c.reasons = reasons
		a.log.LogAttrs(ctx, slog.LevelInfo, "pgw: no source may run; waiting",
			slog.String("scope", a.scope),
			slog.String("reason", c.kind),
			slog.Any("reasons", reasons),
			slog.Duration("retry_after", hint),
			slog.Duration("wait", nap))
		if obs := c.observer(); obs != nil {
			obs.ObserveWaitStart(observe.WaitStart{
				Scope: a.scope, Reason: c.kind, Reasons: reasons,
				RetryAfter: hint, Nap: nap, At: c.since,
			})
		}
	}
	if err := a.sleep(ctx, nap); err != nil {
		c.leave(closedCause(ctx, err), "")
		return err
	}
	return nil
}

// closedCause is the error a wait that err ended is reported with:
// errs.ErrClosed when it is ctx's own error and the gateway's Close ended
// ctx, so that the wait's log line and WaitEnd do not tell a Close as the
// caller's cancellation; err otherwise.
func closedCause(ctx context.Context, err error) error {
	if err == ctx.Err() && errs.ClosedBy(ctx) {
		return errs.ErrClosed
	}
	return err
}

// leave logs the end of a wait, if the call is waiting.
func (c *Call) leave(err error, source string) {
	if !c.waiting {
		return
	}
	c.waiting = false
	a := c.a
	now := a.clock.Now()
	waited := now.Sub(c.since)
	attrs := []slog.Attr{
		slog.String("scope", a.scope),
		slog.String("reason", c.kind),
		slog.Any("reasons", c.reasons),
		slog.Duration("retry_after", c.hint),
		slog.Duration("waited", waited),
		slog.Int("naps", c.naps),
	}
	if err != nil {
		attrs = append(attrs, slog.String("outcome", "error"), slog.Any("err", err))
	} else {
		attrs = append(attrs, slog.String("outcome", "admitted"), slog.String("source", source))
	}
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "pgw: wait over", attrs...)
	if obs := c.observer(); obs != nil {
		obs.ObserveWaitEnd(observe.WaitEnd{
			Scope: a.scope, Reason: c.kind, RetryAfter: c.hint, Waited: waited,
			Naps: c.naps, Source: source, Err: err, At: now,
		})
	}
	if c.wctx != nil {
		tr := a.w.tr
		if c.own {
			tr = c.tr
		}
		tr.EndWait(c.wctx, observe.WaitEnd{
			Scope: a.scope, Reason: c.kind, RetryAfter: c.hint, Waited: waited,
			Naps: c.naps, Source: source, Err: err, At: now,
		})
		c.wctx = nil
	}
	c.naps = 0
}
