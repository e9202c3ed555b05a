package prom_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
# HELP pgw_hedges_total Hedging events by event: fired, won, wasted, canceled (source: the hedge's), skipped_budget, skipped_no_source (source: the attempt that was due a hedge).
# TYPE pgw_hedges_total counter
pgw_hedges_total{event="fired",scope="CHAT",source="s2"} 2
pgw_hedges_total{event="skipped_budget",scope="CHAT",source="s1"} 1
pgw_hedges_total{event="wasted",scope="CHAT",source="s2"} 1
pgw_hedges_total{event="won",scope="CHAT",source="s2"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_hedges_total"))
}

// An attempt pgw cut short — one that lost a hedge race (its time says how
// long the race took), one its caller or the gateway ended (cancelled,
// closed, a stream abandoned before its end: how long the caller waited or
// read) — or one that panicked (when the code it ran broke) is counted by
// its outcome, but its time stays out of pgw_attempt_duration_seconds: none
// says how long the source takes. A failure's time is the source's.
func TestUnmeasuredAttemptsTimeStaysOutOfTheAttemptDuration(t *testing.T) {
	c := prom.New(prom.WithAttemptBuckets([]float64{1}))
	unmeasured := []string{observe.OutcomeAbandoned, observe.OutcomeCanceled, observe.OutcomeClosed, observe.OutcomeHedgeLost, observe.OutcomePanic}
	for _, o := range unmeasured {
		c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
		c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: o, Latency: 30 * time.Second})
	}
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: observe.OutcomeFailure, Latency: 500 * time.Millisecond})
	var counts strings.Builder
	for _, o := range append(unmeasured[:4:4], observe.OutcomeFailure, observe.OutcomePanic) {
		fmt.Fprintf(&counts, "pgw_attempts_total{outcome=%q,scope=\"CHAT\",source=\"s1\"} 1\n", o)
	}
	want := `
# HELP pgw_attempt_duration_seconds Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.
# TYPE pgw_attempt_duration_seconds histogram
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="+Inf"} 1
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s1"} 0.5
pgw_attempt_duration_seconds_count{scope="CHAT",source="s1"} 1
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
` + counts.String() + `# HELP pgw_in_flight Attempts running.
# TYPE pgw_in_flight gauge
pgw_in_flight{scope="CHAT",source="s1"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"pgw_attempt_duration_seconds", "pgw_attempts_total", "pgw_in_flight"))
}
