package otel

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/pgw-go/pgw/observe"
)

var _ observe.AdvertisedObserver = (*Observer)(nil)

// advertisedGauges are the rate-limit figures the upstreams last advertised
// in their answers' headers: the account's headroom as the provider sees it.
type advertisedGauges struct {
	limit     metric.Int64Gauge
	remaining metric.Int64Gauge
	reset     metric.Float64Gauge
}

func (g *advertisedGauges) instruments(m metric.Meter) {
	g.remaining, _ = m.Int64Gauge("pgw_advertised_remaining",
		metric.WithDescription("What the upstream last advertised is left of the window (its rate-limit headers)."))
	g.limit, _ = m.Int64Gauge("pgw_advertised_limit",
		metric.WithDescription("The window's size the upstream last advertised."))
	g.reset, _ = m.Float64Gauge("pgw_advertised_reset_seconds",
		metric.WithDescription("Time to the window's reset, as of the upstream's last answer."), metric.WithUnit("s"))
}

// ObserveAdvertised sets the advertised gauges of e's source, by window
// (requests, tokens), as observe/prom does; a figure the answer did not
// carry is not recorded.
func (ob *Observer) ObserveAdvertised(e observe.Advertised) {
	ctx := context.Background()
	for _, w := range []struct {
		name string
		w    observe.AdvertisedWindow
	}{{"requests", e.Requests}, {"tokens", e.Tokens}} {
		set := ob.sets.get(e.Scope, e.Source, "window", w.name)
		if w.w.Limit >= 0 {
			ob.adv.limit.Record(ctx, w.w.Limit, set)
		}
		if w.w.Remaining >= 0 {
			ob.adv.remaining.Record(ctx, w.w.Remaining, set)
			ob.adv.reset.Record(ctx, w.w.Reset.Seconds(), set)
		}
	}
}
