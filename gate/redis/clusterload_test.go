package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The cluster's fault tests (a slot migration, a failover) run the same
// load: 3 clients, as 3 processes would have, × 16 goroutines of governed
// attempts — TryEnter, Acquire, the call, Record, Finish — on three sources
// whose keys all live in one slot, so that whatever happens to that slot
// happens to each:
//
//   - hot, MAX_IN_FLIGHT 8 and never failing: the in-flight limit is held by
//     the goroutines all the time;
//   - paced, RPM 600: its minute's allowance is spent before the fault, so
//     every admission during the fault is one the bucket's drain allowed;
//   - flaky, failing in phases: its breaker opens, probes and closes again
//     and again, so that probe leases are taken and given back throughout.
//
// Not one gate operation may fail; in flight never exceeds the limit across
// the clients, the paced source admits no more than its bucket allows for
// the run's length, and no two probes of flaky run at once.
const (
	loadProcs, loadGoroutines = 3, 16
	hotInFlight               = 8
	pacedRPM                  = 600
)

// clusterLoad is the running load and its counts.
type clusterLoad struct {
	t                 *testing.T
	scope             string
	hot, paced, flaky string
	breakers          []*redis.Breaker
	start             time.Time
	stop              chan struct{}
	wg                sync.WaitGroup
	pacedFull         chan struct{} // closed at paced's first RPM rejection
	pacedFullOnce     sync.Once
	sick              atomic.Bool
	calls, failed     atomic.Int64 // governed attempts begun; gate operations that failed
	inFlight, peak    atomic.Int64 // hot's calls running and their peak
	hotFull           atomic.Int64 // hot's rejections for a full MAX_IN_FLIGHT
	pacedAdmitted     atomic.Int64
	probing, probes   atomic.Int64 // flaky's probes running and run
	overlaps          atomic.Int64 // probes that began while another ran
	opened            atomic.Int64 // flaky's breaker opened (Record reports Open)
	firstErr          atomic.Pointer[error]
}

// startClusterLoad builds the clients and gates and starts the load.
func startClusterLoad(t *testing.T, cl *testutil.RedisCluster) *clusterLoad {
	l := &clusterLoad{t: t, scope: uniqueScope(), hot: "hot", stop: make(chan struct{}), pacedFull: make(chan struct{})}
	l.paced = sameSlotSource(l.scope, l.hot, "paced-")
	l.flaky = sameSlotSource(l.scope, l.hot, "flaky-")
	limits := map[string]gate.Limits{l.hot: {MaxInFlight: hotInFlight}, l.paced: {RPM: pacedRPM}}
	policy := gate.Policy{
		ConsecutiveFailures: 3, Cooldown: 50 * time.Millisecond, MaxCooldown: 50 * time.Millisecond,
		CooldownMultiplier: 1, ProbeTTL: 2 * time.Second,
	}
	type proc struct {
		b *redis.Breaker
		q *redis.Quota
	}
	ps := make([]proc, loadProcs)
	for i := range ps {
		// As the gateway builds its client: no retry of a command whose
		// reply was lost, the caller's deadline bounds each operation.
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		b, err := redis.NewBreaker(c, l.scope, policy)
		require.NoError(t, err)
		q, err := redis.NewQuota(c, l.scope, limits)
		require.NoError(t, err)
		ps[i] = proc{b, q}
		l.breakers = append(l.breakers, b)
	}
	seed := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = seed.Close() })
	slot := l.slot()
	for _, src := range []string{l.paced, l.flaky} {
		got, err := seed.ClusterKeySlot(t.Context(), ps[0].b.Keys(src)[0]).Result()
		require.NoError(t, err)
		require.Equal(t, slot, got, "%s shares the slot of %s", src, l.hot)
	}

	l.start = time.Now()
	for _, p := range ps {
		for g := range loadGoroutines {
			src := []string{l.hot, l.paced, l.flaky}[g%3]
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				for {
					select {
					case <-l.stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					l.attempt(ctx, p.b, p.q, src)
					cancel()
				}
			}()
		}
	}
	l.wg.Add(1)
	go func() {
		// flaky's upstream: sick for 80 ms, well for 80 ms, and so on.
		defer l.wg.Done()
		tick := time.NewTicker(80 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				l.sick.Store(!l.sick.Load())
			}
		}
	}()
	return l
}

// slot returns the cluster slot of the three sources.
func (l *clusterLoad) slot() int64 { return int64(keySlot(l.breakers[0].Keys(l.hot)[0])) }

// key returns one key of the slot.
func (l *clusterLoad) key() string { return l.breakers[0].Keys(l.hot)[0] }

// waitPacedFull waits until paced's minute allowance is spent.
func (l *clusterLoad) waitPacedFull() {
	select {
	case <-l.pacedFull:
	case <-time.After(20 * time.Second):
		l.t.Fatalf("paced admitted %d without reaching RPM %d", l.pacedAdmitted.Load(), pacedRPM)
	}
}

// stopAndCheck ends the load and asserts its invariants; what names the
// fault, for the log.
func (l *clusterLoad) stopAndCheck(what string) {
	t := l.t
	close(l.stop)
	l.wg.Wait()
	elapsed := time.Since(l.start)
	// The bucket holds one minute's allowance and drains at RPM per minute:
	// from empty, it admits at most RPM plus what drained during the run.
	bound := pacedRPM + int64(float64(pacedRPM)*elapsed.Seconds()/60) + 1
	t.Logf("%s: %d attempts in %v (3 clients × 16 goroutines), %d gate operations failed; "+
		"hot: peak %d in flight (limit %d, %d rejections for it); paced: %d admitted (RPM %d, bound %d for the run); "+
		"flaky: breaker opened %d times, %d probes, %d overlapping",
		what, l.calls.Load(), elapsed.Round(time.Millisecond), l.failed.Load(),
		l.peak.Load(), hotInFlight, l.hotFull.Load(), l.pacedAdmitted.Load(), pacedRPM, bound,
		l.opened.Load(), l.probes.Load(), l.overlaps.Load())
	require.Zero(t, l.failed.Load(), "gate operations failed, first: %v", l.firstError())
	assert.LessOrEqual(t, l.peak.Load(), int64(hotInFlight), "in-flight limit exceeded across the clients")
	assert.Positive(t, l.hotFull.Load(), "hot's in-flight limit was reached")
	assert.LessOrEqual(t, l.pacedAdmitted.Load(), bound, "RPM exceeded across the clients")
	assert.Zero(t, l.overlaps.Load(), "probes overlapped")
	assert.Positive(t, l.probes.Load(), "flaky's breaker probed")
}

// fail counts a failed gate operation and keeps the first one's error.
// (An atomic.Value here panicked as soon as a second error's type differed
// from the first's, and took the whole test binary down.)
func (l *clusterLoad) fail(err error) {
	l.failed.Add(1)
	l.firstErr.CompareAndSwap(nil, &err)
}

// firstError is the first failed gate operation's error, nil when none
// failed.
func (l *clusterLoad) firstError() error {
	if p := l.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// attempt is one governed attempt on src, its give-back included.
func (l *clusterLoad) attempt(ctx context.Context, b *redis.Breaker, q *redis.Quota, src string) {
	l.calls.Add(1)
	d, err := b.TryEnter(ctx, src)
	if err != nil {
		l.fail(err)
		return
	}
	if !d.Allowed {
		// Open: wait a little as a caller would, rather than spin.
		time.Sleep(2 * time.Millisecond)
		return
	}
	p, qd, err := q.Acquire(ctx, src, 0)
	if err != nil || !qd.Allowed {
		if err != nil {
			l.fail(err)
		}
		switch qd.Limit {
		case gate.LimitRPM:
			l.pacedFullOnce.Do(func() { close(l.pacedFull) })
		case gate.LimitInFlight:
			l.hotFull.Add(1)
		}
		if _, err := b.Record(ctx, src, d, gate.Released); err != nil {
			l.fail(err)
		}
		return
	}
	outcome := gate.Success
	switch src {
	case l.hot:
		n := l.inFlight.Add(1)
		for old := l.peak.Load(); n > old && !l.peak.CompareAndSwap(old, n); old = l.peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		l.inFlight.Add(-1)
	case l.paced:
		l.pacedAdmitted.Add(1)
	case l.flaky:
		if d.Probe {
			l.probes.Add(1)
			if l.probing.Add(1) > 1 {
				l.overlaps.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
			l.probing.Add(-1)
		}
		if l.sick.Load() {
			outcome = gate.Failure
		}
	}
	u, err := b.Record(ctx, src, d, outcome)
	if err != nil {
		l.fail(err)
	} else if src == l.flaky && u.Applied && u.State == gate.Open && d.State == gate.Closed {
		l.opened.Add(1)
	}
	if err := q.Finish(ctx, p, 0); err != nil {
		l.fail(err)
	}
}

// sameSlotSource returns the first source name prefix+N whose keys in
// scope share the cluster slot of source's.
func sameSlotSource(scope, source, prefix string) string {
	want := keySlot("{" + scope + ":" + source + "}")
	for n := 0; ; n++ {
		name := fmt.Sprintf("%s%d", prefix, n)
		if keySlot("{"+scope+":"+name+"}") == want {
			return name
		}
	}
}

// keySlot is Redis Cluster's slot of key (testutil.KeySlot).
func keySlot(key string) uint16 { return uint16(testutil.KeySlot(key)) }
