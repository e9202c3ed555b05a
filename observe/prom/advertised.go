package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgw-go/pgw/observe"
)

// advertisedGauges are the rate-limit figures the upstreams last advertised.
type advertisedGauges struct {
	remaining, limit, reset *prometheus.GaugeVec
}

func newAdvertisedGauges(l prometheus.Labels) advertisedGauges {
	labels := []string{"scope", "source", "window"}
	return advertisedGauges{
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_advertised_remaining", Help: "What the upstream last advertised is left of the window (its rate-limit headers).", ConstLabels: l,
		}, labels),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_advertised_limit", Help: "The window's size the upstream last advertised.", ConstLabels: l,
		}, labels),
		reset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgw_advertised_reset_seconds", Help: "Time to the window's reset, as of the upstream's last answer.", ConstLabels: l,
		}, labels),
	}
}

var _ observe.AdvertisedObserver = (*Collector)(nil)

// ObserveAdvertised sets the advertised gauges of e's source; a figure the
// answer did not carry leaves its gauge as it was.
func (c *Collector) ObserveAdvertised(e observe.Advertised) {
	for _, w := range []struct {
		name string
		w    observe.AdvertisedWindow
	}{{"requests", e.Requests}, {"tokens", e.Tokens}} {
		if w.w.Limit >= 0 {
			c.adv.limit.WithLabelValues(e.Scope, e.Source, w.name).Set(float64(w.w.Limit))
		}
		if w.w.Remaining >= 0 {
			c.adv.remaining.WithLabelValues(e.Scope, e.Source, w.name).Set(float64(w.w.Remaining))
			c.adv.reset.WithLabelValues(e.Scope, e.Source, w.name).Set(w.w.Reset.Seconds())
		}
	}
}
