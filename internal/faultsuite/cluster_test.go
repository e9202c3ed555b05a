package faultsuite_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fs "github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The cluster fault tests run whole gateways — pgw.New on
// PGW_REDIS_CLUSTER_ADDRS, so the combined admission script on the callers'
// path, the outcome writer's pipelined conclusions, the outage prober and
// the fleet heartbeat — in 3 processes × 16 goroutines, while the one hash
// slot that holds all of it is moved between masters or failed over. The
// sources (faultsuite.SlotTopology) are named so that their keys and the
// fleet's heartbeat key share that slot:
//
//   - hot (TOOL), MAX_IN_FLIGHT clusterHotInFlight, each attempt held
//     hotAttempt by its upstream: the load keeps every slot busy;
//   - paced (EMBEDDING), RPM clusterPacedRPM: its minute's allowance is spent
//     before the fault, so every admission during it is one the bucket's
//     drain allowed;
//   - flaky (CHAT), whose upstream fails in phases: its breaker opens, probes
//     and closes throughout.
//
// With PGW_REDIS_DOWN=fail_closed a call that Redis failed ends with
// ErrUnreachable: none may, nor may a call end any way its source's own
// behaviour does not explain.
const (
	clusterHotInFlight = 8
	clusterPacedRPM    = 1200
	hotAttempt         = 20 * time.Millisecond
	flakyPhase         = 150 * time.Millisecond
)

// clusterAllowed are the results each operation may end with besides a
// success: a full quota for hot and paced (every scope fails fast), an open
// breaker or failed attempts for flaky.
var clusterAllowed = map[string][]string{
	fs.OpTool:   {fs.ResultQuotaExhausted},
	fs.OpEmbed:  {fs.ResultQuotaExhausted},
	fs.OpChat:   {fs.ResultCircuitOpen, fs.ResultUnavailable},
	fs.OpStream: {fs.ResultCircuitOpen, fs.ResultUnavailable},
}

// clusterRig is one cluster scenario's world.
type clusterRig struct {
	t                 *testing.T
	ctx               context.Context
	cl                *testutil.RedisCluster
	nodes             map[string]*goredis.Client // every node, by address
	slot              int
	hot, paced, flaky string
	upHot             *testutil.Upstream
	upPaced           *testutil.Upstream
	upFlaky           *testutil.Upstream
}

// runCluster puts 3 worker processes × 16 goroutines on a 3-master
// cluster with replicas, waits until paced's allowance is spent, runs fault
// (which returns what it did, for the log) and checks the invariants.
func runCluster(t *testing.T, fault func(r *clusterRig) string) {
	const workers, goroutines = 3, 16
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := testutil.StartRedisCluster(t, testutil.WithReplicas())
	r := &clusterRig{t: t, ctx: ctx, cl: cl, nodes: map[string]*goredis.Client{}, slot: fs.FleetSlot(),
		upHot: testutil.NewUpstream(t), upPaced: testutil.NewUpstream(t), upFlaky: testutil.NewUpstream(t)}
	for _, n := range cl.All() {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr})
		t.Cleanup(func() { _ = c.Close() })
		r.nodes[n.Addr] = c
	}
	r.hot = fs.SourceInSlot(fs.ScopeTool, "hot", r.slot)
	r.paced = fs.SourceInSlot(fs.ScopeEmbed, "paced", r.slot)
	r.flaky = fs.SourceInSlot(fs.ScopeChat, "flaky", r.slot)

	r.upHot.SetDefault(testutil.Embeddings, testutil.Reply{FirstTokenDelay: hotAttempt})
	spent := make(chan struct{})
	var spentOnce sync.Once
	r.upPaced.SetScript(testutil.Embeddings, func(n int) testutil.Reply {
		if n >= clusterPacedRPM {
			spentOnce.Do(func() { close(spent) })
		}
		return testutil.Reply{}
	})

	prefix := "pgw-fault-" + t.Name()
	env := fs.SlotTopology{
		ClusterAddrs: cl.Addrs, Prefix: prefix, Down: "fail_closed",
		Hot: r.hot, Paced: r.paced, Flaky: r.flaky,
		UpstreamHot: r.upHot.URL, UpstreamPaced: r.upPaced.URL, UpstreamFlaky: r.upFlaky.URL,
		HotInFlight: clusterHotInFlight, PacedRPM: clusterPacedRPM,
		StallWindow: stallWindow, Poll: poll, FailureThreshold: 3,
		Cooldown: 100 * time.Millisecond, MaxCooldown: 200 * time.Millisecond,
		Timeout: sourceTimeout,
	}.Env()
	spec := fs.Spec{
		Env:        env,
		Goroutines: goroutines,
		Mix:        map[string]int{fs.OpChat: 1, fs.OpStream: 1, fs.OpEmbed: 2, fs.OpTool: 3},
		// Every scope fails fast: a pause keeps the rejected goroutines from
		// spinning on two shared cores.
		Think:       10 * time.Millisecond,
		Window:      stallWindow + poll,
		Bound:       stallWindow + poll + slack,
		AllowedByOp: clusterAllowed,
	}

	start := time.Now()
	fleet, err := fs.Launch(ctx, workers, spec)
	require.NoError(t, err)
	t.Cleanup(fleet.Kill)

	// flaky's upstream: failing for a phase, answering for the next.
	stopFlaky := make(chan struct{})
	flakyDone := make(chan struct{})
	go func() {
		defer close(flakyDone)
		tick := time.NewTicker(flakyPhase)
		defer tick.Stop()
		sick := false
		for {
			select {
			case <-stopFlaky:
				r.upFlaky.SetScript(testutil.Chat, nil)
				return
			case <-tick.C:
			}
			if sick = !sick; sick {
				r.upFlaky.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
			} else {
				r.upFlaky.SetScript(testutil.Chat, nil)
			}
		}
	}()
	select {
	case <-spent:
	case <-ctx.Done():
		t.Fatalf("paced admitted %d without reaching its RPM %d", r.upPaced.Requests(testutil.Embeddings), clusterPacedRPM)
	}

	require.NoError(t, fleet.Phase("fault"))
	what := fault(r)
	require.NoError(t, fleet.Phase("after"))
	r.sleep(500 * time.Millisecond) // the load on the slot's final owner
	close(stopFlaky)
	<-flakyDone
	require.NoError(t, fleet.Stop(ctx))
	elapsed := time.Since(start)
	leases, err := fs.InspectCluster(ctx, cl.Addrs, prefix, fs.SourcesOf(env))
	require.NoError(t, err)
	reports, err := fleet.Close(ctx)
	require.NoError(t, err)
	m := fs.Merge(reports)

	failed := int64(0)
	for k, n := range m.Ops {
		op, result, _ := strings.Cut(k, "/")
		if result != fs.ResultSuccess && result != fs.ResultAbandoned && !slices.Contains(clusterAllowed[op], result) {
			failed += n
		}
	}
	faultCalls := int64(0)
	if p := m.Phases["fault"]; p != nil {
		faultCalls = p.Calls
	}
	peak := r.upHot.PeakConcurrency()
	paced := int64(r.upPaced.Requests(testutil.Embeddings))
	// The bucket holds one minute's allowance and drains at RPM a minute:
	// from full, it admits at most RPM plus what drained during the run.
	bound := int64(clusterPacedRPM) + int64(float64(clusterPacedRPM)*elapsed.Seconds()/60) + 1
	overlaps := fs.ProbeOverlaps(m.Probes, nil, true)
	var inFlight, probeLeases int64
	for _, l := range leases {
		inFlight += l.InFlight
		probeLeases += l.Probes
		if l.InFlight != 0 || l.Probes != 0 {
			t.Logf("leases alive after the run: %s", l)
		}
	}
	t.Logf("%s, slot %d (sources %s, %s, %s and the fleet heartbeat), %d workers × %d goroutines, %v:\n"+
		"calls %d (%d during the fault), failed %d, redis_down %d; hot: peak %d in flight at its upstream (MAX_IN_FLIGHT %d), %d rejected full; "+
		"paced: %d admitted (RPM %d, bound %d for the run); flaky: %d probes, %d overlapping; "+
		"leases left: in-flight %d, probes %d; writer failed %d, dropped %d; goroutines left %d\n%s",
		what, r.slot, r.hot, r.paced, r.flaky, workers, goroutines, elapsed.Round(time.Millisecond),
		m.Calls, faultCalls, failed, m.Results[fs.ResultRedisDown], peak, clusterHotInFlight, m.Ops[fs.OpTool+"/"+fs.ResultQuotaExhausted],
		paced, clusterPacedRPM, bound, len(m.Probes), len(overlaps),
		inFlight, probeLeases, m.WriterFailed, m.WriterDropped, m.Goroutines, m.Summary())

	assert.Zero(t, failed, "calls failed:\n%s", strings.Join(m.Examples, "\n"))
	assert.Zero(t, m.Violations, "invariants broken:\n%s", strings.Join(m.Examples, "\n"))
	if during := m.Phases["fault"]; assert.NotNil(t, during, "calls ended during the fault") {
		assert.Positive(t, during.Results[fs.ResultSuccess], "calls succeeded during the fault")
	}
	assert.Positive(t, m.Ops[fs.OpTool+"/"+fs.ResultSuccess], "hot's calls succeeded")
	assert.Positive(t, m.Ops[fs.OpTool+"/"+fs.ResultQuotaExhausted], "hot's MAX_IN_FLIGHT was held full")
	assert.LessOrEqual(t, peak, clusterHotInFlight, "hot's in-flight limit exceeded across the processes")
	assert.LessOrEqual(t, paced, bound, "paced's RPM exceeded across the processes")
	assert.Positive(t, len(m.Probes), "flaky's breaker probed")
	assert.Empty(t, overlaps, "at most one probe of flaky at a time")
	assert.Zero(t, inFlight, "in-flight leases left after the run")
	assert.Zero(t, probeLeases, "probe leases left after the run")
	assert.Zero(t, m.WriterFailed+m.WriterDropped, "outcomes the writer failed to write or dropped")
	assert.Zero(t, m.Goroutines, "goroutines left after Close:\n%s", m.Stacks)
	for _, msg := range slices.Sorted(maps.Keys(m.Warnings)) {
		assert.NotContains(t, msg, "redis", "a gateway saw Redis fail: %q × %d", msg, m.Warnings[msg])
	}
}

// TestClusterSlotMigrationUnderWholeGateways moves the slot back and forth
// between two masters the way redis-cli --cluster reshard does, under the
// load of whole gateways.
func TestClusterSlotMigrationUnderWholeGateways(t *testing.T) {
	const moves = 6
	runCluster(t, func(r *clusterRig) string {
		ids := map[string]string{}
		for _, addr := range r.cl.Addrs {
			id, err := r.nodes[addr].Do(r.ctx, "CLUSTER", "MYID").Text()
			require.NoError(t, err)
			ids[addr] = id
		}
		from := r.owner()
		to := r.cl.Addrs[0]
		if to == from {
			to = r.cl.Addrs[1]
		}
		for range moves {
			r.migrate(ids, from, to)
			require.Equal(t, to, r.owner(), "the slot moved")
			from, to = to, from
			r.sleep(150 * time.Millisecond) // the load on the new owner
		}
		return fmt.Sprintf("slot moved %d times", moves)
	})
}

// TestClusterFailoverUnderWholeGateways fails the slot's master over to its
// replica with CLUSTER FAILOVER, then back, under the load of whole
// gateways.
func TestClusterFailoverUnderWholeGateways(t *testing.T) {
	runCluster(t, func(r *clusterRig) string {
		var took []string
		for range 2 { // over and back
			master := r.owner()
			replica := r.cl.ReplicaOf(master)
			require.NotNil(t, replica, "master %s has a replica", master)
			start := time.Now()
			require.NoError(t, r.cl.Failover(r.ctx, replica))
			took = append(took, time.Since(start).Round(time.Millisecond).String())
			require.Equal(t, replica.Addr, r.owner(), "the replica serves the slot")
			r.sleep(300 * time.Millisecond) // the load on the new master
		}
		return fmt.Sprintf("slot failed over and back (%s to settle)", strings.Join(took, ", "))
	})
}

// owner returns the address of the master that serves the slot: the others
// (and the replicas) answer MOVED to a key of it.
func (r *clusterRig) owner() string {
	key := "{pgw-fleet}"
	for addr, c := range r.nodes {
		if c.Type(r.ctx, key).Err() == nil {
			return addr
		}
	}
	r.t.Fatalf("no node serves slot %d", r.slot)
	return ""
}

// migrate moves the slot from one master to another as redis-cli --cluster
// reshard does: IMPORTING and MIGRATING, MIGRATE of every key, then SETSLOT
// NODE on both and on the third master.
func (r *clusterRig) migrate(ids map[string]string, from, to string) {
	t, ctx := r.t, r.ctx
	src, dst := r.nodes[from], r.nodes[to]
	require.NoError(t, dst.Do(ctx, "CLUSTER", "SETSLOT", r.slot, "IMPORTING", ids[from]).Err())
	require.NoError(t, src.Do(ctx, "CLUSTER", "SETSLOT", r.slot, "MIGRATING", ids[to]).Err())
	r.sleep(30 * time.Millisecond) // the window in which multi-key scripts meet TRYAGAIN and ASK
	host, port, err := net.SplitHostPort(to)
	require.NoError(t, err)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, r.slot, 100).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, src.Do(ctx, args...).Err(), fmt.Sprint("MIGRATE ", keys))
	}
	for _, addr := range []string{to, from} {
		require.NoError(t, r.nodes[addr].Do(ctx, "CLUSTER", "SETSLOT", r.slot, "NODE", ids[to]).Err())
	}
	for _, addr := range r.cl.Addrs {
		if addr != to && addr != from {
			require.NoError(t, r.nodes[addr].Do(ctx, "CLUSTER", "SETSLOT", r.slot, "NODE", ids[to]).Err())
		}
	}
}

// sleep lets the load run for d: the scenario's clock, not a wait for a
// goroutine.
func (r *clusterRig) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-r.ctx.Done():
	}
}
