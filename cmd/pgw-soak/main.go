// Command pgw-soak puts pgw under a bounded soak on this machine, loopback
// only: worker processes (this binary re-executed) each run a GatewayClient
// on a shared Redis and goroutines of governed calls — Chat, ChatStream,
// Embed and pgw.Call — against two fake OpenAI-compatible upstreams that go
// through scripted phases:
//
//	healthy → 5xx storm → 429 storm (Retry-After) → recovery → flaky
//
// It prints the calls, their outcomes per phase, the governance overhead and
// the invariant violations, and exits 1 when there is any.
//
//	go run ./cmd/pgw-soak                        (make soak: 4 × 64, 60 s)
//	go run ./cmd/pgw-soak -duration 10s -goroutines 16 -procs 2   (make soak-short)
//
// Overhead is measured per call: the call's wall time minus the time spent
// inside the upstream transport (the HTTP exchange with the fake), for calls
// that succeeded in one attempt — what admission, the Redis gate round trips
// (TryEnter, Acquire, Record, Settle, Release) and the bookkeeping cost on
// top of the raw upstream call. The healthy phase shows it alone; later
// phases add waits for open breakers and Retry-After.
//
// Invariants (see internal/faultsuite): every call ends with an expected
// result; no call spends longer outside its attempts than the stall window
// plus one poll interval plus a slack, unless its scope kept delivering; a
// cancelled call returns promptly; no attempt breaks an upstream Retry-After
// its process received; no two probes of one source run at once; after the
// run no in-flight or probe lease is left in Redis and no goroutine of pgw,
// go-redis or net/http is left in a worker after Close. A run whose healthy
// phase saw no call succeed fails too: its invariants held of nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The soak's bounds.
const (
	maxDuration = 2 * time.Minute
	minDuration = 5 * time.Second
)

// The gateways' timings: short, so that every phase sees breakers open,
// probe and close several times.
const (
	stallWindow = 2 * time.Second
	poll        = 50 * time.Millisecond
	timeout     = 2 * time.Second
	// slack covers a call's gate round trips and the scheduling of several
	// busy processes on a small machine.
	slack = time.Second
)

func main() {
	faultsuite.MaybeRunWorker()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	duration   time.Duration
	procs      int
	goroutines int
	think      time.Duration
	redisAddr  string
	verbose    bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("pgw-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the load runs (5s to 2m)")
	fs.IntVar(&o.procs, "procs", 4, "worker processes")
	fs.IntVar(&o.goroutines, "goroutines", 64, "goroutines making calls in each worker")
	fs.DurationVar(&o.think, "think", 500*time.Millisecond,
		"most a goroutine pauses between calls (uniform); the default keeps 4 × 64 goroutines below what 2 cores serve, so that overhead is not queueing; 0 for a closed loop")
	fs.StringVar(&o.redisAddr, "redis", "", "a loopback redis host:port to use instead of starting redis-server")
	fs.BoolVar(&o.verbose, "v", false, "copy the gateways' warnings to stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var bad []string
	if o.duration < minDuration || o.duration > maxDuration {
		bad = append(bad, fmt.Sprintf("-duration %v (legal: %v to %v)", o.duration, minDuration, maxDuration))
	}
	if o.procs < 1 || o.procs > 16 {
		bad = append(bad, fmt.Sprintf("-procs %d (legal: 1 to 16)", o.procs))
	}
	if o.goroutines < 1 || o.goroutines > 512 {
		bad = append(bad, fmt.Sprintf("-goroutines %d (legal: 1 to 512)", o.goroutines))
	}
	if o.think < 0 {
		bad = append(bad, fmt.Sprintf("-think %v (legal: ≥ 0)", o.think))
	}
	if o.redisAddr != "" && !loopback(o.redisAddr) {
		bad = append(bad, fmt.Sprintf("-redis %q (legal: a loopback host:port; the soak stays on this machine)", o.redisAddr))
	}
	if len(bad) > 0 {
		return o, errors.New("pgw-soak: invalid flags: " + strings.Join(bad, "; "))
	}
	return o, nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.duration+time.Minute) // start and wind-down included
	defer cancel()

	addr, started := o.redisAddr, "given"
	if addr == "" {
		srv, err := startRedis(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "pgw-soak:", err)
			return 2
		}
		defer srv.stop()
		addr, started = srv.addr, "started"
	}
	up1, stop1 := testutil.StartUpstream()
	defer stop1()
	up2, stop2 := testutil.StartUpstream()
	defer stop2()

	topo := faultsuite.Topology{
		Backend: "redis", RedisAddr: addr, Down: "fail_open",
		Prefix:    fmt.Sprintf("pgw-soak-%d", time.Now().UnixNano()),
		Upstream1: up1.URL, Upstream2: up2.URL,
		StallWindow: stallWindow, Poll: poll, FailureThreshold: 3,
		Cooldown: 250 * time.Millisecond, MaxCooldown: 2 * time.Second, Timeout: timeout,
		// Wide enough not to bind under this load: the leases are taken and
		// given back on every call, and the overhead is not a queue.
		ToolInFlight: 256, WideInFlight: 1024,
	}
	spec := faultsuite.Spec{
		Env:        topo.Env(),
		Goroutines: o.goroutines,
		Think:      o.think,
		Mix: map[string]int{faultsuite.OpChat: 3, faultsuite.OpStream: 2, faultsuite.OpEmbed: 2,
			faultsuite.OpTool: 3},
		AbandonRate:  0.1,
		CancelRate:   0.05,
		CancelWithin: 50 * time.Millisecond,
		Window:       stallWindow + poll,
		Bound:        stallWindow + poll + slack,
		CancelBound:  500 * time.Millisecond,
		// Close's flush bound for queued outcomes (2 s) and a slack.
		CloseBound: 3 * time.Second,
		// quota_exhausted: an upstream's Retry-After hold-off is a
		// quota-like rejection, and a wait that cannot end within the
		// call's deadline ends at once.
		Allowed: []string{faultsuite.ResultCircuitOpen, faultsuite.ResultQuotaExhausted, faultsuite.ResultStalled, faultsuite.ResultUnavailable,
			faultsuite.ResultCanceled, faultsuite.ResultCut},
		RetryAfterGrace: 100 * time.Millisecond,
		Verbose:         o.verbose,
	}
	fmt.Fprintf(stdout, "pgw-soak: %d processes × %d goroutines (think ≤ %v), %v, redis %s (%s), 2 fake upstreams, loopback only\n",
		o.procs, o.goroutines, o.think, o.duration, addr, started)

	fleet, err := faultsuite.Launch(ctx, o.procs, spec)
	if err != nil {
		fmt.Fprintln(stderr, "pgw-soak:", err)
		return 2
	}
	defer fleet.Kill()
	began := time.Now()
	plan := phases(o.duration)
	for _, p := range plan {
		p.script(up1, up2)
		if err := fleet.Phase(p.name); err != nil {
			fmt.Fprintln(stderr, "pgw-soak:", err)
			return 2
		}
		select {
		case <-time.After(time.Until(began.Add(p.until))):
		case <-ctx.Done():
			fmt.Fprintln(stderr, "pgw-soak: interrupted:", ctx.Err())
			return 2
		}
	}
	if err := fleet.Stop(ctx); err != nil {
		fmt.Fprintln(stderr, "pgw-soak:", err)
		return 2
	}
	leases, err := faultsuite.Inspect(ctx, addr, topo.Prefix, faultsuite.SourcesOf(spec.Env))
	if err != nil {
		fmt.Fprintln(stderr, "pgw-soak:", err)
		return 2
	}
	reports, err := fleet.Close(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "pgw-soak:", err)
		return 2
	}
	m := faultsuite.Merge(reports)
	violations := printReport(stdout, m, plan, leases, time.Since(began))
	if violations > 0 {
		return 1
	}
	return 0
}

// printReport prints the figures and returns the number of violations.
func printReport(w io.Writer, m faultsuite.Report, plan []phase, leases []faultsuite.Leases, took time.Duration) int64 {
	fmt.Fprintf(w, "\nran %v: %d calls (%.0f/s) over %d workers\n", took.Round(100*time.Millisecond), m.Calls,
		float64(m.Calls)/took.Seconds(), m.Workers)
	results := resultNames(m)
	fmt.Fprintf(w, "\n%-9s %8s", "phase", "calls")
	for _, r := range results {
		fmt.Fprintf(w, " %12s", r)
	}
	fmt.Fprintf(w, " %14s %14s\n", "overhead p50", "overhead p99")
	row := func(name string, calls int64, res map[string]int64, h faultsuite.Histogram) {
		fmt.Fprintf(w, "%-9s %8d", name, calls)
		for _, r := range results {
			fmt.Fprintf(w, " %12d", res[r])
		}
		fmt.Fprintf(w, " %14v %14v\n", h.Quantile(0.5), h.Quantile(0.99))
	}
	for _, p := range plan {
		if ph := m.Phases[p.name]; ph != nil {
			row(p.name, ph.Calls, ph.Results, ph.Overhead)
		}
	}
	row("total", m.Calls, m.Results, m.Overhead)

	fmt.Fprintf(w, "\noverhead = governed call time − time inside the upstream transport, for calls that succeeded in one attempt (%d calls)\n", m.Overhead.N)
	if h := m.Phases["healthy"]; h != nil {
		fmt.Fprintf(w, "  healthy phase (gates only): p50 %v, p99 %v\n", h.Overhead.Quantile(0.5), h.Overhead.Quantile(0.99))
	}
	fmt.Fprintf(w, "  whole run (waits included):  p50 %v, p99 %v, max %v\n", m.Overhead.Quantile(0.5), m.Overhead.Quantile(0.99), m.Overhead.Max())
	fmt.Fprintf(w, "time outside attempts (bound: stall window + poll = %v, + %v slack): max %v (%s); %d calls past %v within the slack; %d past it while their scope kept delivering (legal: the stall budget counts from the scope's last success; max %v)\n",
		stallWindow+poll, slack, m.MaxStall.Round(time.Millisecond), m.MaxStallCall, m.Late, stallWindow+poll,
		m.Excused, m.MaxStallExcused.Round(time.Millisecond))
	fmt.Fprintf(w, "cancelled calls: %d, max return after cancel %v (longest process pause %v)\n",
		m.Cancelled, m.MaxCancelLatency.Round(time.Microsecond), m.MaxPause.Round(time.Microsecond))

	violations := m.Violations
	overlaps := faultsuite.ProbeOverlaps(m.Probes, m.Outages, true)
	violations += int64(len(overlaps))
	fmt.Fprintf(w, "probe attempts: %d, overlapping probes of one source: %d\n", len(m.Probes), len(overlaps))
	var inFlight, probes int64
	for _, l := range leases {
		inFlight += l.InFlight
		probes += l.Probes
	}
	violations += inFlight + probes
	fmt.Fprintf(w, "leases left in Redis: %d in-flight, %d probes\n", inFlight, probes)
	fmt.Fprintf(w, "outcomes the writers failed to write: %d, dropped: %d; gate replies lost: acquire %d, release %d, try_enter %d, record %d\n",
		m.WriterFailed, m.WriterDropped, m.Lost.Acquire, m.Lost.Release, m.Lost.TryEnter, m.Lost.Record)
	fmt.Fprintf(w, "longest Close: %v; goroutines left in the workers after it: %d\n", m.Close.Round(time.Microsecond), m.Goroutines)
	if len(m.Outages) > 0 {
		violations += int64(len(m.Outages))
		fmt.Fprintf(w, "redis outages seen by the gateways: %d (the soak injects none)\n", len(m.Outages))
	}
	// Every invariant holds of a run whose calls never reached an upstream
	// (no call, or every one refused): such a run proves nothing and must
	// not pass.
	if h := m.Phases["healthy"]; h == nil || h.Results[faultsuite.ResultSuccess] == 0 {
		violations++
		fmt.Fprintf(w, "no call succeeded in the healthy phase: the load never reached the upstreams\n")
	}
	fmt.Fprintf(w, "invariant violations: %d\n", violations)
	for _, e := range append(m.Examples, overlaps...) {
		fmt.Fprintf(w, "  %s\n", e)
	}
	for _, l := range leases {
		if l.InFlight+l.Probes > 0 {
			fmt.Fprintf(w, "  lease left: %s\n", l)
		}
	}
	if m.Goroutines > 0 {
		fmt.Fprintf(w, "%s\n", m.Stacks)
	}
	return violations
}

// resultNames orders the results seen: success first, then by name.
func resultNames(m faultsuite.Report) []string {
	var names []string
	for r := range m.Results {
		if r != faultsuite.ResultSuccess {
			names = append(names, r)
		}
	}
	slices.Sort(names)
	return append([]string{faultsuite.ResultSuccess}, names...)
}
