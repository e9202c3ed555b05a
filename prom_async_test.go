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

// The Prometheus collector behind an Async queue too small for the load —
// the README's setup, with a member slow enough that the queue overflows
// all the time — still ends with nothing in flight: an attempt whose start
// the queue dropped has its end dropped too, and the end of one whose start
// went in is never lost.
func TestPrometheusInFlightBehindAnOverflowingAsyncQueue(t *testing.T) {
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	slow := observe.Funcs{AttemptStart: func(observe.AttemptStart) { time.Sleep(50 * time.Microsecond) }}
	obs := observe.Async(observe.Multi(slow, c), 2)
	c.CountDropped(obs)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":           "RERANK",
		"RERANK__SOURCES":      "a,b",
		"RERANK__MAX_ATTEMPTS": "2",
	}, pgw.WithObserver(obs))

	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
					if n.Add(1)%5 == 0 {
						return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: 503}
					}
					return 1, pgw.Usage{}, nil
				})
			}
		})
	}
	wg.Wait()
	require.NoError(t, gw.Close())
	obs.Close()

	require.NotZero(t, obs.Dropped(), "the queue must overflow for this test to say anything")
	assert.GreaterOrEqual(t, requireNoneInFlight(t, reg), 1)
}
