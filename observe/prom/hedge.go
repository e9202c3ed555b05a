package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgw-go/pgw/observe"
)

var _ observe.HedgeObserver = (*Collector)(nil)

func newHedges(constLabels prometheus.Labels) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "pgw_hedges_total",
		Help:        "Hedging events by event: fired, won, wasted, canceled (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge).",
		ConstLabels: constLabels,
	}, []string{"scope", "source", "event"})
}

// ObserveHedge counts the hedging event.
func (c *Collector) ObserveHedge(e observe.Hedge) {
	source := e.Source
	if source == "" {
		source = e.Primary
	}
	c.hedges.WithLabelValues(e.Scope, source, e.Event).Inc()
}
