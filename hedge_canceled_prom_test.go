package pgw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe/prom"
)

// A hedged call its caller cancels while both attempts run counts its
// hedge canceled in pgw_hedges_total — not wasted: no attempt delivered —
// and both attempts canceled, none hedge_lost, with no time in
// pgw_attempt_duration_seconds.
func TestPrometheusCountsTheHedgeOfACanceledCallCanceled(t *testing.T) {
	up := testutil.NewUpstream(t)
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "HEDGED",
		"HEDGED__SOURCES":        "slow,fast",
		"HEDGED__SLOW__BASE_URL": up.URL,
		"HEDGED__FAST__BASE_URL": up.URL,
		"HEDGED__HEDGE_AFTER_S":  "0.01",
		"HEDGED__FAST__PRIORITY": "1",
	}, pgw.WithObserver(c))
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan string, 2)
	go func() {
		// Once both attempts run, the caller gives up.
		<-running
		<-running
		cancel()
	}()
	_, err := pgw.Call(ctx, gw, "HEDGED", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		running <- src.Name
		<-ctx.Done()
		return 0, pgw.Usage{}, ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, gw.Close()) // waits for every attempt's give-back
	want := `
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="canceled",scope="HEDGED",source="fast"} 1
pgw_attempts_total{outcome="canceled",scope="HEDGED",source="slow"} 1
# HELP pgw_hedges_total Hedging events by event: fired, won, wasted, canceled (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge).
# TYPE pgw_hedges_total counter
pgw_hedges_total{event="canceled",scope="HEDGED",source="fast"} 1
pgw_hedges_total{event="fired",scope="HEDGED",source="fast"} 1
`
	require.NoError(t, promtest.GatherAndCompare(reg, strings.NewReader(want), "pgw_attempts_total", "pgw_hedges_total"))
	n, err := promtest.GatherAndCount(reg, "pgw_attempt_duration_seconds")
	require.NoError(t, err)
	require.Zero(t, n, "no cancelled attempt's time")
}
