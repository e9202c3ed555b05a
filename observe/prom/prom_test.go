package prom_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
	pgwtest "github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// scene is one CHAT scope with sources s1 and s2 on a memory breaker (one
// failure opens a source for a minute) and a fake clock, observed by a
// Collector.
type scene struct {
	clk  *pgwtest.FakeClock
	b    *memory.Breaker
	loop *retry.Loop
	c    *prom.Collector
}

func newScene(t *testing.T, circuitOpen config.Mode) *scene {
	t.Helper()
	clk := pgwtest.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute, ProbeTTL: 10 * time.Minute},
		memory.WithClock(clk))
	require.NoError(t, err)
	s := &scene{clk: clk, b: b, c: prom.New()}
	s.loop, err = retry.New(retry.Config{
		Scope: config.ScopeSettings{Name: "CHAT", CircuitOpen: circuitOpen, PollInterval: 50 * time.Millisecond,
			StallWindow: 5 * time.Minute, Sources: []config.Source{{Name: "s1"}, {Name: "s2"}}},
		Breaker: b,
		Clock:   clk,
		Sleep: func(_ context.Context, d time.Duration) error {
			clk.Advance(d)
			return nil
		},
		Rand:     func() float64 { return 0 }, // configuration order, no backoff, jitter poll/2
		Logger:   slog.New(slog.DiscardHandler),
		Observer: s.c,
	})
	require.NoError(t, err)
	return s
}

// answer is how one attempt on a source goes: how long it takes, and its
// error.
type answer struct {
	took time.Duration
	err  error
}

// call runs one call whose attempts answer from plan, per source, in order.
func (s *scene) call(plan map[string][]answer) error {
	_, err := retry.Run(context.Background(), s.loop, 10, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		a := plan[src.Name][0]
		plan[src.Name] = plan[src.Name][1:]
		s.clk.Advance(a.took)
		return "ok", transport.Usage{TotalTokens: 5}, a.err
	})
	return err
}

func httpStatus(status int) error {
	return &errs.HTTPError{StatusCode: status, Message: "upstream says no"}
}

func TestMetricsAfterAScriptedScenario(t *testing.T) {
	s := newScene(t, "fail_fast")
	ms := time.Millisecond
	// 1: s1 fails and opens; s2 answers (s1, demoted for the rest of the
	// call, is not even asked: no rejection).
	require.NoError(t, s.call(map[string][]answer{"s1": {{100 * ms, httpStatus(503)}}, "s2": {{300 * ms, nil}}}))
	// 2: s1 is cooling down; s2 answers.
	require.NoError(t, s.call(map[string][]answer{"s2": {{200 * ms, nil}}}))
	// 3: s2 says the request is wrong.
	require.Error(t, s.call(map[string][]answer{"s2": {{50 * ms, httpStatus(400)}}}))
	// 4: an operator forces s2 open: nothing may run, fail fast.
	require.NoError(t, s.b.Force(context.Background(), "s2", gate.ForceOpen))
	require.Error(t, s.call(nil))

	want := `
# HELP pgw_attempts_total Finished attempts of governed calls, by outcome.
# TYPE pgw_attempts_total counter
pgw_attempts_total{outcome="caller_error",scope="CHAT",source="s2"} 1
pgw_attempts_total{outcome="failure",scope="CHAT",source="s1"} 1
pgw_attempts_total{outcome="success",scope="CHAT",source="s2"} 2
# HELP pgw_calls_total Finished governed calls, by result.
# TYPE pgw_calls_total counter
pgw_calls_total{result="caller_error",scope="CHAT"} 1
pgw_calls_total{result="circuit_open",scope="CHAT"} 1
pgw_calls_total{result="success",scope="CHAT"} 2
# HELP pgw_gate_rejections_total Sources an admission round skipped, by reason (cooldown, circuit_open, rate_limited, retry_after, adaptive_paced).
# TYPE pgw_gate_rejections_total counter
pgw_gate_rejections_total{reason="circuit_open",scope="CHAT",source="s1"} 1
pgw_gate_rejections_total{reason="circuit_open",scope="CHAT",source="s2"} 1
pgw_gate_rejections_total{reason="cooldown",scope="CHAT",source="s1"} 2
# HELP pgw_breaker_state Breaker state last seen: 0 closed, 1 open, 2 half_open.
# TYPE pgw_breaker_state gauge
pgw_breaker_state{scope="CHAT",source="s1"} 1
pgw_breaker_state{scope="CHAT",source="s2"} 1
# HELP pgw_breaker_forced Operator override last seen: 0 none, 1 forced open, 2 forced closed.
# TYPE pgw_breaker_forced gauge
pgw_breaker_forced{scope="CHAT",source="s1"} 0
pgw_breaker_forced{scope="CHAT",source="s2"} 1
# HELP pgw_in_flight Attempts running.
# TYPE pgw_in_flight gauge
pgw_in_flight{scope="CHAT",source="s1"} 0
pgw_in_flight{scope="CHAT",source="s2"} 0
`
	require.NoError(t, testutil.CollectAndCompare(s.c, strings.NewReader(want),
		"pgw_attempts_total", "pgw_calls_total", "pgw_gate_rejections_total",
		"pgw_breaker_state", "pgw_breaker_forced", "pgw_in_flight"))

	hist := `
# HELP pgw_attempt_duration_seconds Attempt latency (a chat stream: until it ended); attempts cut short (cancelled, closed, abandoned, or that lost a hedge race) and those that panicked are left out.
# TYPE pgw_attempt_duration_seconds histogram
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="0.05"} 0
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="0.1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="0.25"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="0.5"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="2.5"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="5"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="10"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="20"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="30"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="60"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="120"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s1",le="+Inf"} 1
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s1"} 0.1
pgw_attempt_duration_seconds_count{scope="CHAT",source="s1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="0.05"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="0.1"} 1
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="0.25"} 2
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="0.5"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="1"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="2.5"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="5"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="10"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="20"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="30"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="60"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="120"} 3
pgw_attempt_duration_seconds_bucket{scope="CHAT",source="s2",le="+Inf"} 3
pgw_attempt_duration_seconds_sum{scope="CHAT",source="s2"} 0.55
pgw_attempt_duration_seconds_count{scope="CHAT",source="s2"} 3
`
	require.NoError(t, testutil.CollectAndCompare(s.c, strings.NewReader(hist), "pgw_attempt_duration_seconds"))
}

// A call that waits out a cooldown (CIRCUIT_OPEN=wait) lands in the wait
// histogram with the time it waited.
func TestWaitDurationAfterACooldown(t *testing.T) {
	s := newScene(t, "wait")
	ctx := context.Background()
	for _, src := range []string{"s1", "s2"} {
		d, err := s.b.TryEnter(ctx, src)
		require.NoError(t, err)
		_, err = s.b.Record(ctx, src, d, gate.Failure)
		require.NoError(t, err)
	}
	require.NoError(t, s.call(map[string][]answer{"s1": {{10 * time.Millisecond, nil}}}))
	// One nap: the cooldown plus half a poll of jitter (Rand 0).
	want := `
# HELP pgw_wait_duration_seconds Time calls waited for a runnable source.
# TYPE pgw_wait_duration_seconds histogram
pgw_wait_duration_seconds_bucket{scope="CHAT",le="0.1"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="0.5"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="1"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="5"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="10"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="30"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="60"} 0
pgw_wait_duration_seconds_bucket{scope="CHAT",le="120"} 1
pgw_wait_duration_seconds_bucket{scope="CHAT",le="300"} 1
pgw_wait_duration_seconds_bucket{scope="CHAT",le="600"} 1
pgw_wait_duration_seconds_bucket{scope="CHAT",le="+Inf"} 1
pgw_wait_duration_seconds_sum{scope="CHAT"} 60.025
pgw_wait_duration_seconds_count{scope="CHAT"} 1
`
	require.NoError(t, testutil.CollectAndCompare(s.c, strings.NewReader(want), "pgw_wait_duration_seconds"))
	// s1: open → half_open (the probe) → closed (its success); s2 still open.
	state := `
# HELP pgw_breaker_state Breaker state last seen: 0 closed, 1 open, 2 half_open.
# TYPE pgw_breaker_state gauge
pgw_breaker_state{scope="CHAT",source="s1"} 0
pgw_breaker_state{scope="CHAT",source="s2"} 1
`
	require.NoError(t, testutil.CollectAndCompare(s.c, strings.NewReader(state), "pgw_breaker_state"))
}

func TestDroppedEventsAreCounted(t *testing.T) {
	c := prom.New()
	a := c.Async(4)
	a.Close()
	a.ObserveCall(observe.CallResult{Scope: "CHAT", Result: "success"}) // after Close: dropped
	c.CountDropped(fixedDropper(6))
	want := `
# HELP pgw_observer_dropped_total Observer events dropped by a full Async queue (or after Close).
# TYPE pgw_observer_dropped_total counter
pgw_observer_dropped_total 7
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_observer_dropped_total"))
}

type fixedDropper uint64

func (d fixedDropper) Dropped() uint64 { return uint64(d) }

func TestCollectorRegistersWithConstLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := prom.New(prom.WithConstLabels(prometheus.Labels{"service": "api"}))
	require.NoError(t, reg.Register(c))
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "OCR", Source: "a"})
	n, err := testutil.GatherAndCount(reg, "pgw_in_flight", "pgw_breaker_state")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var found bool
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == "service" && l.GetValue() == "api")
			}
			assert.True(t, found, "%s carries the const label", mf.GetName())
		}
	}
}
