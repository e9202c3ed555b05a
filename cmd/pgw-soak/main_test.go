package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/faultsuite"
)

func TestFlagsDefaultToFourProcessesOf64GoroutinesForAMinute(t *testing.T) {
	o, err := parse(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, options{duration: time.Minute, procs: 4, goroutines: 64, think: 500 * time.Millisecond}, o)
}

func TestFlagsRejectWhatWouldUnboundTheSoak(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "3m"}, "-duration 3m0s (legal: 5s to 2m0s)"},
		{[]string{"-duration", "1s"}, "-duration 1s (legal: 5s to 2m0s)"},
		{[]string{"-procs", "0"}, "-procs 0 (legal: 1 to 16)"},
		{[]string{"-goroutines", "1000"}, "-goroutines 1000 (legal: 1 to 512)"},
		{[]string{"-redis", "10.0.0.1:6379"}, `-redis "10.0.0.1:6379" (legal: a loopback host:port`},
		{[]string{"-redis", "redis.internal:6379"}, `-redis "redis.internal:6379"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := parse(tt.args, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLoopbackAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6379": true, "[::1]:6379": true, "localhost:6379": true, "127.0.0.2:1": true,
		"0.0.0.0:6379": false, "192.168.1.2:6379": false, "localhost": false,
	} {
		assert.Equal(t, want, loopback(addr), addr)
	}
}

func TestPhasesCoverTheRunInOrder(t *testing.T) {
	ps := phases(10 * time.Second)
	var names []string
	var last time.Duration
	for _, p := range ps {
		names = append(names, p.name)
		assert.Greater(t, p.until, last, p.name)
		last = p.until
	}
	assert.Equal(t, []string{"healthy", "5xx", "429", "recovery", "flaky"}, names)
	assert.Equal(t, 10*time.Second, last)
}

// healthyRun is a report of a run that broke nothing: every call of the
// healthy phase succeeded.
func healthyRun() faultsuite.Report {
	return faultsuite.Report{
		Workers: 2, Calls: 10, Results: map[string]int64{faultsuite.ResultSuccess: 10},
		Phases: map[string]*faultsuite.Phase{"healthy": {Calls: 10, Results: map[string]int64{faultsuite.ResultSuccess: 10}}},
	}
}

func probe(worker int, fromMs, toMs int64) faultsuite.Interval {
	return faultsuite.Interval{Worker: worker, Scope: faultsuite.ScopeChat, Source: "a",
		Start: fromMs * int64(time.Millisecond), End: toMs * int64(time.Millisecond)}
}

// The soak's verdict counts what the parent checks itself — probes of one
// source overlapping across processes, leases left in Redis, outages — on
// top of what the workers reported, and prints each kind.
func TestReportCountsEveryKindOfViolation(t *testing.T) {
	tests := []struct {
		name   string
		plant  func(m *faultsuite.Report, leases *[]faultsuite.Leases)
		want   int64
		prints string
	}{
		{"nothing broken", func(*faultsuite.Report, *[]faultsuite.Leases) {}, 0, "invariant violations: 0"},
		{"two probes of one source at once", func(m *faultsuite.Report, _ *[]faultsuite.Leases) {
			m.Probes = []faultsuite.Interval{probe(0, 0, 10), probe(1, 5, 20)}
		}, 1, "overlaps probe of worker 1"},
		{"leases left in Redis", func(_ *faultsuite.Report, l *[]faultsuite.Leases) {
			*l = []faultsuite.Leases{{Scope: faultsuite.ScopeTool, Source: "t1", InFlight: 2, Probes: 1}}
		}, 3, "lease left: TOOL/t1: in-flight 2"},
		{"a redis outage", func(m *faultsuite.Report, _ *[]faultsuite.Leases) {
			m.Outages = []faultsuite.Interval{{Worker: 0, Scope: "breaker"}}
		}, 1, "redis outages seen by the gateways: 1"},
		{"a worker's own findings", func(m *faultsuite.Report, _ *[]faultsuite.Leases) {
			m.Violations, m.Examples = 2, []string{"worker 0: chat call ended other: boom"}
		}, 2, "worker 0: chat call ended other: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := healthyRun()
			var leases []faultsuite.Leases
			tt.plant(&m, &leases)
			var out strings.Builder
			got := printReport(&out, m, phases(10*time.Second), leases, 10*time.Second)
			assert.Equal(t, tt.want, got, out.String())
			assert.Contains(t, out.String(), tt.prints)
		})
	}
}

// A soak whose calls never succeeded proved nothing: every invariant holds
// vacuously when no call reaches an upstream (a wrong BASE_URL, an upstream
// that never came up, gates refusing everything). Its healthy phase must
// have delivered, or the run fails.
func TestReportFailsARunWhoseHealthyPhaseDeliveredNothing(t *testing.T) {
	for name, m := range map[string]faultsuite.Report{
		"no calls at all": {Results: map[string]int64{}, Phases: map[string]*faultsuite.Phase{}},
		"every call unavailable": {Workers: 2, Calls: 40, Results: map[string]int64{faultsuite.ResultUnavailable: 40},
			Phases: map[string]*faultsuite.Phase{"healthy": {Calls: 40, Results: map[string]int64{faultsuite.ResultUnavailable: 40}}}},
	} {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			got := printReport(&out, m, phases(10*time.Second), nil, 10*time.Second)
			assert.Equal(t, int64(1), got, out.String())
			assert.Contains(t, out.String(), "no call succeeded in the healthy phase")
		})
	}
}
