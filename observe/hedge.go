package observe

import (
	"context"
	"time"
)

// OutcomeHedgeLost is the AttemptRecord.Outcome of an attempt that lost a
// hedge race: another attempt of its call delivered first, and this one was
// cancelled and given back as Released — never a failure of its source. An
// attempt the call's end cut, with no attempt delivered, is reported as that
// end instead: OutcomeCanceled (the caller's ctx, or another attempt's caller
// error that ended the call), OutcomeClosed, or OutcomeAbandoned for a panic.
const OutcomeHedgeLost = "hedge_lost"

// The values of Hedge.Event.
const (
	// HedgeFired: a call's attempt went the hedge delay without its first
	// chunk, and a hedge attempt started on Source.
	HedgeFired = "fired"
	// HedgeWon: the hedge on Source delivered first; its answer is the
	// call's.
	HedgeWon = "won"
	// HedgeWasted: the hedge on Source did not deliver first (the attempt
	// it hedged did, or it failed).
	HedgeWasted = "wasted"
	// HedgeCanceled: the call ended while the hedge on Source ran, before
	// any of its attempts delivered — its caller's ctx, the gateway's Close,
	// a panic that went on to the caller, or another attempt's caller error
	// (a 400, say): the hedge neither won nor lost to another attempt. Its
	// AttemptRecord says which (OutcomeCanceled, OutcomeClosed,
	// OutcomeAbandoned; OutcomePanic when it is the attempt that panicked).
	// A hedge that answered the caller error itself is HedgeWasted.
	HedgeCanceled = "canceled"
	// HedgeSkippedBudget: a hedge was due but the scope's hedge budget was
	// spent (Source is empty).
	HedgeSkippedBudget = "skipped_budget"
	// HedgeSkippedNoSource: a hedge was due but no other source was
	// admitted (Source is empty).
	HedgeSkippedNoSource = "skipped_no_source"
)

// Hedge is one hedging event of a call.
type Hedge struct {
	// Scope names the scope; Source the hedge attempt's source (empty for
	// the skipped events); Primary the source of the attempt it hedged.
	Scope, Source, Primary string
	// Event is one of the Hedge… constants.
	Event string
	// At is when it happened.
	At time.Time
}

// HedgeObserver is an Observer that also wants the hedging events of the
// scopes that hedge. Multi, Async, Funcs and Nop pass them on.
type HedgeObserver interface {
	// ObserveHedge is called for each hedging event.
	ObserveHedge(Hedge)
}

// ObserveHedge does nothing.
func (Nop) ObserveHedge(Hedge) {}

// ObserveHedge calls f.Hedge.
func (f Funcs) ObserveHedge(e Hedge) {
	if f.Hedge != nil {
		f.Hedge(e)
	}
}

// ObserveHedge queues e.
func (a *AsyncObserver) ObserveHedge(e Hedge) { a.send(e) }

func (a *adapter) ObserveHedge(e Hedge) {
	if h, ok := a.o.(HedgeObserver); ok {
		h.ObserveHedge(e)
	}
}

func (m *multi) ObserveHedge(e Hedge) {
	for _, o := range m.obs {
		if h, ok := o.(HedgeObserver); ok {
			h.ObserveHedge(e)
		}
	}
}

// deliverHedge hands e to o when it wants hedges.
func deliverHedge(o Full, e Hedge) {
	if h, ok := o.(HedgeObserver); ok {
		h.ObserveHedge(e)
	}
}

// HedgeContextObserver is a ContextObserver that also wants each hedging
// event with the ctx of the call it belongs to (the ctx its StartCall
// returned), as a tracer does to put the event on the call's span. It is
// called besides ObserveHedge, only for calls that find the observer enabled.
// Multi passes the event to each member that implements it.
type HedgeContextObserver interface {
	// ObserveHedgeContext is called for each hedging event with the ctx
	// of its call.
	ObserveHedgeContext(ctx context.Context, e Hedge)
}

// ObserveHedgeContext passes e to the wrapped observer when it wants it
// with the ctx.
func (a *adapter) ObserveHedgeContext(ctx context.Context, e Hedge) {
	if h, ok := a.o.(HedgeContextObserver); ok {
		h.ObserveHedgeContext(ctx, e)
	}
}

// ObserveHedgeContext passes e to the members that want it with the ctx.
func (m *multi) ObserveHedgeContext(ctx context.Context, e Hedge) {
	for _, o := range m.obs {
		if h, ok := o.(HedgeContextObserver); ok {
			h.ObserveHedgeContext(ctx, e)
		}
	}
}
