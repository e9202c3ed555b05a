package prom_test

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgw-go/pgw/observe/prom"
)

// Register the collector, put it behind an Async queue for the gateway and
// serve /metrics.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	c := prom.New(prom.WithConstLabels(prometheus.Labels{"service": "search"}))
	reg.MustRegister(c)
	obs := c.Async(0) // pgw_observer_dropped_total counts what it drops
	defer obs.Close()
	// … retry.Config{Observer: obs}, or the gateway's observer option …
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	_ = mux // http.ListenAndServe(":9090", mux)
	// Output:
}
