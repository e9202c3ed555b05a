package pgw_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
)

// auditPromSums adds up every series of each metric family of reg: a
// counter's value, a histogram's sample count, a gauge's value.
func auditPromSums(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				out[mf.GetName()] += m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			case m.Gauge != nil:
				out[mf.GetName()] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// Many callers at once on two sources with two slots each, so that calls
// wait for a slot, fail over and trip breakers: the Collector, called
// synchronously, counts exactly what happened — one call per call, one
// attempt per upstream try, one rejection and one wait sample per event —
// and ends with nothing in flight and each breaker gauge on the last state
// the events showed.
func TestPrometheusCountsAreExactUnderConcurrentWaitsAndFailOver(t *testing.T) {
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	var rejections, waits atomic.Int64
	var mu sync.Mutex
	last := map[string]float64{}
	tally := observe.Funcs{
		Rejection: func(observe.Rejection) { rejections.Add(1) },
		WaitEnd:   func(observe.WaitEnd) { waits.Add(1) },
		StateChange: func(e observe.StateChange) {
			mu.Lock()
			last[e.Source] = float64(e.To)
			mu.Unlock()
		},
	}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                "RERANK",
		"RERANK__SOURCES":           "a,b",
		"RERANK__A__MAX_IN_FLIGHT":  "2",
		"RERANK__B__MAX_IN_FLIGHT":  "2",
		"RERANK__MAX_ATTEMPTS":      "3",
		"RERANK__FAILURE_THRESHOLD": "3",
		"RERANK__COOLDOWN_S":        "0.01",
		"RERANK__POLL_INTERVAL_S":   "0.005",
		"RERANK__STALL_WINDOW_S":    "30",
	}, pgw.WithObserver(observe.Multi(tally, c)))

	const callers, each = 12, 25
	var tries atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				_, _ = pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
					n := tries.Add(1)
					time.Sleep(200 * time.Microsecond)
					if n%4 == 0 {
						return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: 503}
					}
					return 1, pgw.Usage{}, nil
				})
			}
		})
	}
	wg.Wait()

	sums := auditPromSums(t, reg)
	require.Positive(t, waits.Load(), "calls must have waited for this test to say anything")
	require.Positive(t, rejections.Load())
	assert.Equal(t, float64(callers*each), sums["pgw_calls_total"])
	assert.Equal(t, float64(tries.Load()), sums["pgw_attempts_total"])
	assert.Equal(t, float64(tries.Load()), sums["pgw_attempt_duration_seconds"], "every try ran to its answer")
	assert.Equal(t, float64(rejections.Load()), sums["pgw_gate_rejections_total"])
	assert.Equal(t, float64(waits.Load()), sums["pgw_wait_duration_seconds"])
	assert.Zero(t, sums["pgw_in_flight"])
	mu.Lock()
	defer mu.Unlock()
	var lastSum float64
	for _, v := range last {
		lastSum += v
	}
	assert.Equal(t, lastSum, sums["pgw_breaker_state"], "each gauge on the last state reported: %v", last)
}
