package faultsuite_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestMain doubles as the workers' entry point: Launch re-executes the test
// binary with faultsuite.WorkerEnv set.
func TestMain(m *testing.M) {
	faultsuite.MaybeRunWorker()
	goredis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// The scopes' short timings, shared by every scenario (Redis tests use real short
// durations). A waiting call ends at most stallWindow + poll after it began
// waiting, unless its scope delivered meanwhile.
const (
	stallWindow = time.Second
	poll        = 50 * time.Millisecond
	// slack covers a call's gate round trips (Pick before an attempt, the
	// give-back after it) and the scheduling of several race-instrumented
	// processes on a shared 2-core machine.
	slack = 750 * time.Millisecond
	// toolInFlight is each ScopeTool source's MAX_IN_FLIGHT (two sources).
	toolInFlight = 4
	// sourceTimeout is every source's TIMEOUT_S; leaseLife the default
	// probe lease that follows from it, which in-flight leases share.
	sourceTimeout = 2 * time.Second
	leaseLife     = sourceTimeout + 5*time.Second
	// closeBound is how long a worker's Close may take once its load has
	// stopped: the outcome writer's flush bound (2 s) and a slack.
	closeBound = 3 * time.Second
)

// scenario is one fault under load.
type scenario struct {
	backend     string // "redis" (default) or "memory"
	mode        string // PGW_REDIS_DOWN: fail_open (default) or fail_closed
	workers     int
	goroutines  int
	ownRedis    bool // count lost replies (see faultsuite.Spec.OwnRedis)
	readTimeout time.Duration
	allowed     []string
	mix         map[string]int
	abandon     float64
	cancelRate  float64
	cancelBound time.Duration
	raGrace     time.Duration
	// upstream scripts the upstreams before the load starts.
	upstream func(r *rig)
	// fault runs while the load runs and returns the windows in which
	// probes of several processes may overlap (Redis lost its leases).
	fault func(r *rig) []faultsuite.Interval
	// capacity, when set, runs after the load stopped and the leases were
	// read, before the workers close.
	capacity func(r *rig, f *faultsuite.Fleet)
}

// rig is one scenario's world: a redis-server, two fake upstreams and the
// fleet of workers.
type rig struct {
	t        *testing.T
	redis    *testutil.RedisServer // nil for the memory backend
	up1, up2 *testutil.Upstream
	prefix   string
	ctx      context.Context
}

// result is what run measured, for the scenario's own checks.
type result struct {
	report faultsuite.Report
	leases []faultsuite.Leases
}

func run(t *testing.T, sc scenario) result {
	t.Helper()
	r := &rig{t: t, up1: testutil.NewUpstream(t), up2: testutil.NewUpstream(t),
		prefix: "pgw-fault-" + strings.ReplaceAll(t.Name(), "/", "-")}
	if sc.backend == "" {
		sc.backend = "redis"
	}
	if sc.backend == "redis" {
		r.redis = testutil.StartRedis(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r.ctx = ctx
	if sc.upstream != nil {
		sc.upstream(r)
	}
	spec := sc.spec(r)
	fleet, err := faultsuite.Launch(ctx, sc.workers, spec)
	require.NoError(t, err)
	t.Cleanup(fleet.Kill)

	var excused []faultsuite.Interval
	if sc.fault != nil {
		excused = sc.fault(r)
	}
	require.NoError(t, fleet.Stop(ctx))
	var res result
	if r.redis != nil {
		res.leases, err = faultsuite.Inspect(ctx, r.redis.Addr, r.prefix, faultsuite.SourcesOf(spec.Env))
		require.NoError(t, err)
	}
	if sc.capacity != nil {
		sc.capacity(r, fleet)
	}
	reports, err := fleet.Close(ctx)
	require.NoError(t, err)
	res.report = faultsuite.Merge(reports)
	m := res.report
	t.Logf("%d workers × %d goroutines, bound %v\n%s", sc.workers, sc.goroutines, spec.Bound, m.Summary())
	for _, l := range res.leases {
		if l.InFlight != 0 || l.Probes != 0 {
			t.Logf("leases alive after the run: %s", l)
		}
	}

	assert.Positive(t, m.Results[faultsuite.ResultSuccess], "the load made successful calls")
	assert.Zero(t, m.Violations, "invariants broken:\n%s", strings.Join(m.Examples, "\n"))
	assert.Zero(t, m.Goroutines, "goroutines left after Close:\n%s", m.Stacks)
	assert.Empty(t, faultsuite.ProbeOverlaps(m.Probes, append(excused, m.Outages...), sc.backend == "redis"),
		"at most one probe per lease")
	var inFlight, probes int64
	for _, l := range res.leases {
		inFlight += l.InFlight
		probes += l.Probes
	}
	// A lease is left behind only when a reply was lost: an Acquire or
	// TryEnter that ran, a Release or Record that did not. It expires on its
	// own.
	assert.LessOrEqual(t, inFlight, m.Lost.InFlight(), "in-flight leases left in Redis beyond the lost Acquire and Release replies")
	assert.LessOrEqual(t, probes, m.Lost.Probes(), "probe leases left in Redis beyond the lost TryEnter and Record replies")
	// And it expires within one probe lease of the slowest source
	// (max(2 × 2 s, 2 s + 5 s)): a lost reply costs seconds of capacity,
	// not redis.DefaultLease's 10 minutes.
	for _, l := range res.leases {
		assert.LessOrEqual(t, l.InFlightLife, leaseLife, "%s: in-flight lease life", l)
		assert.LessOrEqual(t, l.ProbeLife, leaseLife, "%s: probe lease life", l)
	}
	return res
}

// spec renders the scenario for the workers.
func (sc scenario) spec(r *rig) faultsuite.Spec {
	if sc.mode == "" {
		sc.mode = "fail_open"
	}
	if sc.mix == nil {
		sc.mix = map[string]int{faultsuite.OpChat: 3, faultsuite.OpStream: 2, faultsuite.OpEmbed: 2, faultsuite.OpTool: 3}
	}
	s := faultsuite.Spec{
		Env:             sc.env(r),
		Goroutines:      sc.goroutines,
		Mix:             sc.mix,
		AbandonRate:     sc.abandon,
		CancelRate:      sc.cancelRate,
		CancelWithin:    30 * time.Millisecond,
		Window:          stallWindow + poll,
		Bound:           stallWindow + poll + slack,
		CancelBound:     sc.cancelBound,
		CloseBound:      closeBound,
		Allowed:         sc.allowed,
		RetryAfterGrace: sc.raGrace,
	}
	if sc.ownRedis {
		s.OwnRedis, s.RedisAddr, s.RedisReadTimeout = true, r.redis.Addr, sc.readTimeout
	}
	return s
}

// env is the gateways' configuration (faultsuite.Topology): breakers trip
// after 3 failures and cool down 0.2 s, growing to 0.8 s.
func (sc scenario) env(r *rig) map[string]string {
	t := faultsuite.Topology{
		Backend: sc.backend, Prefix: r.prefix, Down: sc.mode,
		Upstream1: r.up1.URL, Upstream2: r.up2.URL,
		StallWindow: stallWindow, Poll: poll, FailureThreshold: 3,
		Cooldown: 200 * time.Millisecond, MaxCooldown: 800 * time.Millisecond,
		Timeout: sourceTimeout, ToolInFlight: toolInFlight, WideInFlight: 256,
	}
	if t.Down == "" {
		t.Down = "fail_open"
	}
	if r.redis != nil {
		t.RedisAddr = r.redis.Addr
		if !sc.ownRedis {
			t.ReadTimeout = sc.readTimeout
		}
	}
	return t.Env()
}

// sleep lets the load run for d. It is the scenario's clock, not a wait for
// a goroutine.
func (r *rig) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-r.ctx.Done():
	}
}

// window is [from, to] as an excused interval.
func window(from, to time.Time) faultsuite.Interval {
	return faultsuite.Interval{Start: from.UnixNano(), End: to.UnixNano()}
}

// each sets the same default reply on both upstreams for chat, embeddings
// (which ScopeTool calls too).
func (r *rig) each(reply *testutil.Reply) {
	for _, up := range []*testutil.Upstream{r.up1, r.up2} {
		for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings} {
			if reply == nil {
				up.SetScript(ep, nil)
			} else {
				up.SetDefault(ep, *reply)
			}
		}
	}
}

// requireCapacity makes every worker hold 2 × toolInFlight ScopeTool calls
// at once: all get in only if no in-flight slot leaked.
func requireCapacity(r *rig, f *faultsuite.Fleet) { requireCapacityOf(r, f, toolInFlight) }

// requireCapacityOf makes every worker hold 2 × perSource ScopeTool calls
// at once.
func requireCapacityOf(r *rig, f *faultsuite.Fleet, perSource int) {
	got, err := f.Capacity(r.ctx, 2*perSource)
	require.NoError(r.t, err)
	for i, n := range got {
		assert.Equal(r.t, 2*perSource, n, "worker %d: ScopeTool calls held at once (%d × 2 sources)", i, perSource)
	}
}
