package prom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
)

func TestHedgesAreCountedBySourceAndEvent(t *testing.T) {
	c := prom.New()
	// Through Multi and Async, as a gateway passes them on.
	a := observe.Async(observe.Multi(c), 16)
	for _, e := range []observe.Hedge{
		{Scope: "CHAT", Source: "s2", Primary: "s1", Event: observe.HedgeFired},
		{Scope: "CHAT", Source: "s2", Primary: "s1", Event: observe.HedgeWon},
		{Scope: "CHAT", Source: "s2", Primary: "s1", Event: observe.HedgeFired},
		{Scope: "CHAT", Source: "s2", Primary: "s1", Event: observe.HedgeWasted},
		{Scope: "CHAT", Primary: "s1", Event: observe.HedgeSkippedBudget},
	} {
		a.ObserveHedge(e)
	}
	a.Close()
	want := `
# HELP pgw_hedges_total Hedging events by event: fired, won, wasted (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge).
# TYPE pgw_hedges_total counter
pgw_hedges_total{event="fired",scope="CHAT",source="s2"} 2
pgw_hedges_total{event="skipped_budget",scope="CHAT",source="s1"} 1
pgw_hedges_total{event="wasted",scope="CHAT",source="s2"} 1
pgw_hedges_total{event="won",scope="CHAT",source="s2"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_hedges_total"))
}
