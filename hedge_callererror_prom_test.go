package pgw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe/prom"
)

// A hedged race that one attempt's caller error (a 400) ends has no winner:
// the attempt it cut is counted canceled in pgw_attempts_total, not
// hedge_lost, and a hedge it cut canceled in pgw_hedges_total, not wasted;
// a hedge that answered with the caller error itself is wasted. Only the
// caller error's time is in pgw_attempt_duration_seconds.
func TestPrometheusCountsTheAttemptsACallerErrorCutCanceled(t *testing.T) {
	for _, c := range []struct {
		name    string
		errFrom string // the source that answers 400; the other waits for its ctx
		hedge   string // the hedge's own event besides fired
	}{
		{"hedge_rejected", "fast", "wasted"},
		{"primary_rejected", "slow", "canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := prom.New()
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(col))
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "HEDGED",
				"HEDGED__SOURCES":        "slow,fast",
				"HEDGED__HEDGE_AFTER_S":  "0.01",
				"HEDGED__FAST__PRIORITY": "1",
			}, pgw.WithObserver(col))
			hedged := make(chan struct{}) // the hedge runs
			_, err := pgw.Call(context.Background(), gw, "HEDGED", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
				if src.Name == "fast" {
					close(hedged)
				} else {
					<-hedged
				}
				if src.Name == c.errFrom {
					return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: 400}
				}
				<-ctx.Done()
				return 0, pgw.Usage{}, ctx.Err()
			})
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he)
			require.NoError(t, gw.Close()) // waits for every attempt's give-back
			cut := map[string]string{"fast": "slow", "slow": "fast"}[c.errFrom]
			want := `
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="caller_error",scope="HEDGED",source="` + c.errFrom + `"} 1
pgw_attempts_total{outcome="canceled",scope="HEDGED",source="` + cut + `"} 1
# HELP pgw_calls_total Finished governed calls, by result.
# TYPE pgw_calls_total counter
pgw_calls_total{result="caller_error",scope="HEDGED"} 1
# HELP pgw_hedges_total Hedging events by event: fired, won, wasted, canceled (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge).
# TYPE pgw_hedges_total counter
pgw_hedges_total{event="` + c.hedge + `",scope="HEDGED",source="fast"} 1
pgw_hedges_total{event="fired",scope="HEDGED",source="fast"} 1
`
			require.NoError(t, promtest.GatherAndCompare(reg, strings.NewReader(want), "pgw_attempts_total", "pgw_calls_total", "pgw_hedges_total"))
			mfs, err := reg.Gather()
			require.NoError(t, err)
			timed := map[string]uint64{}
			for _, mf := range mfs {
				if mf.GetName() != "pgw_attempt_duration_seconds" {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "source" {
							timed[l.GetValue()] = m.GetHistogram().GetSampleCount()
						}
					}
				}
			}
			assert.Equal(t, map[string]uint64{c.errFrom: 1}, timed, "only the caller error's time")
		})
	}
}
