package prom_test

import (
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

// An attempt that lost a hedge race is counted by its outcome, but its time
// stays out of pgw_attempt_duration_seconds: pgw cut it short, so it says
// how long the race took, not how long the source takes.
func TestALostHedgesTimeStaysOutOfTheAttemptDuration(t *testing.T) {
	c := prom.New(prom.WithAttemptBuckets([]float64{1}))
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s2"})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s2", Outcome: observe.OutcomeSuccess, Latency: 300 * time.Millisecond})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: observe.OutcomeHedgeLost, Latency: 2 * time.Second})
	want := `
# HELP pgw_attempt_duration_seconds Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.
# TYPE pgw_attempt_duration_seconds histogram
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="+Inf"} 1
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s2"} 0.3
pgw_attempt_duration_seconds_count{scope="CHAT",source="s2"} 1
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="hedge_lost",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="success",scope="CHAT",source="s2"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_attempt_duration_seconds", "pgw_attempts_total"))
}

// An attempt its caller or the gateway cut short — cancelled, closed, or a
// stream abandoned before its end — is counted by its outcome, but its time
// stays out of pgw_attempt_duration_seconds as a lost hedge's does: it says
// how long the caller waited or read, not how long the source takes.
func TestACutShortAttemptsTimeStaysOutOfTheAttemptDuration(t *testing.T) {
	c := prom.New(prom.WithAttemptBuckets([]float64{1}))
	for _, o := range []string{observe.OutcomeCanceled, observe.OutcomeClosed, observe.OutcomeAbandoned} {
		c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
		c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: o, Latency: 30 * time.Second})
	}
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: observe.OutcomeFailure, Latency: 500 * time.Millisecond})
	want := `
# HELP pgw_attempt_duration_seconds Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.
# TYPE pgw_attempt_duration_seconds histogram
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="+Inf"} 1
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s1"} 0.5
pgw_attempt_duration_seconds_count{scope="CHAT",source="s1"} 1
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="abandoned",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="canceled",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="closed",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="failure",scope="CHAT",source="s1"} 1
# HELP pgw_in_flight Attempts running.
# TYPE pgw_in_flight gauge
pgw_in_flight{scope="CHAT",source="s1"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"pgw_attempt_duration_seconds", "pgw_attempts_total", "pgw_in_flight"))
}

// An attempt that panicked is counted by its outcome, but its time stays
// out of pgw_attempt_duration_seconds: it says when the code it ran broke,
// not how long the source takes.
func TestAPanickedAttemptsTimeStaysOutOfTheAttemptDuration(t *testing.T) {
	c := prom.New(prom.WithAttemptBuckets([]float64{1}))
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: observe.OutcomePanic, Latency: 2 * time.Millisecond})
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "CHAT", Source: "s1"})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "CHAT", Source: "s1", Outcome: observe.OutcomeSuccess, Latency: 500 * time.Millisecond})
	want := `
# HELP pgw_attempt_duration_seconds Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.
# TYPE pgw_attempt_duration_seconds histogram
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="+Inf"} 1
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s1"} 0.5
pgw_attempt_duration_seconds_count{scope="CHAT",source="s1"} 1
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="panic",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="success",scope="CHAT",source="s1"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_attempt_duration_seconds", "pgw_attempts_total"))
}
