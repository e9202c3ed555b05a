package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgw-go/pgw/observe"
)

// Hedging's event and attributes on the call's span.
const (
	// EventHedge is an event of the call's span for each hedging event of
	// the call: a hedge fired, won, wasted or canceled (the call ended
	// first), or one that was due but skipped.
	EventHedge = "pgw.hedge"
	// AttrHedgeOutcome is the event's kind: fired, won, wasted, canceled,
	// skipped_budget or skipped_no_source (observe.Hedge…). The event's
	// AttrSource is the hedge attempt's source, absent for a skipped one.
	AttrHedgeOutcome = attribute.Key("pgw.hedge.outcome")
	// AttrHedgePrimary is the source of the attempt the hedge raced.
	AttrHedgePrimary = attribute.Key("pgw.hedge.primary")
)

var (
	_ observe.HedgeObserver        = (*Observer)(nil)
	_ observe.HedgeContextObserver = (*Observer)(nil)
)

// ObserveHedge counts the hedging event in pgw_hedges_total, by scope,
// source (the hedge's; the hedged attempt's for a skipped one) and event, as
// observe/prom does.
func (ob *Observer) ObserveHedge(e observe.Hedge) {
	source := e.Source
	if source == "" {
		source = e.Primary
	}
	ob.hedges.Add(context.Background(), 1, ob.sets.get(e.Scope, source, "event", e.Event))
}

// ObserveHedgeContext adds a "pgw.hedge" event to the call's span.
func (ob *Observer) ObserveHedgeContext(ctx context.Context, e observe.Hedge) {
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil || !cs.span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, AttrHedgeOutcome.String(e.Event), AttrHedgePrimary.String(e.Primary))
	if e.Source != "" {
		attrs = append(attrs, AttrSource.String(e.Source))
	}
	cs.span.AddEvent(EventHedge, trace.WithTimestamp(e.At), trace.WithAttributes(attrs...))
}
