package modelcheck

import (
	"flag"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

var (
	flagSeed  = flag.Uint64("pgw.seed", 0, "replay only this seed in the model tests (or PGW_SEED)")
	flagBase  = flag.Uint64("pgw.base", 1, "first seed of the model tests' seed range (explore others with e.g. -pgw.base=1000000)")
	flagSeeds = flag.Int("pgw.seeds", 0, "number of seeds of the simulated model tests (default 300 breaker, 200 quota; fewer under -race)")
	flagSteps = flag.Int("pgw.steps", 0, "steps per sequence of the simulated model tests (default 200)")
	flagEach  = flag.Bool("pgw.each", false, "simulated model tests: compare snapshots after every Enter and Record (slower, pinpoints hidden-state divergences)")
)

// Sizes of the runs. Simulated time is exact and cheap; real time is neither.
const (
	miniSeeds     = 300
	miniSeedsRace = 50 // see underRace
	miniSteps     = 200
	realSeeds     = 5
	realSteps     = 60
	// realMargin keeps real-time operations this far from any instant where
	// their answer may change; realTolerance bounds the difference of
	// RetryAfter and OpenUntil between the gates, which read the clock a few
	// hundred µs apart (more on a busy machine).
	realMargin    = 40 * time.Millisecond
	realTolerance = 30 * time.Millisecond
	// shrinkBudget bounds the replays of one shrink.
	shrinkBudget = 3000
	// reportFailures is how many diverging seeds are shrunk and printed.
	reportFailures = 3
)

// seedList returns the seeds to run: the one of -pgw.seed or PGW_SEED, or n
// seeds from -pgw.base on.
func seedList(t *testing.T, n int) []uint64 {
	t.Helper()
	if *flagSeed != 0 {
		return []uint64{*flagSeed}
	}
	if v := os.Getenv("PGW_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "PGW_SEED must be an unsigned integer")
		return []uint64{s}
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = *flagBase + uint64(i)
	}
	return out
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// rig builds fresh lockstep worlds on one Redis.
type rig interface {
	world(p gate.Policy) (*breakerWorld, error)
	quotaWorld(limits map[string]gate.Limits, lease time.Duration) (*quotaWorld, error)
	// exact: simulated time, compared exactly; replays are deterministic.
	exact() bool
}

// miniRig reuses one miniredis for many runs: each world flushes it and
// sets its clock back to testutil.Epoch.
type miniRig struct {
	m *miniredis.Miniredis
	c *goredis.Client
	// wrap, when set, wraps the Redis gate (the harness's self-test plants
	// a bug there).
	wrap func(*redis.Breaker) gate.ProviderGate
	// snapEach: see breakerWorld.snapEach.
	snapEach bool
	// wrapQuota, when set, wraps the Redis quota gate.
	wrapQuota func(gate.QuotaGate) gate.QuotaGate
}

func newMiniRig(t *testing.T) *miniRig {
	t.Helper()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return &miniRig{m: m, c: c, snapEach: *flagEach}
}

func (r *miniRig) exact() bool { return true }

func (r *miniRig) world(p gate.Policy) (*breakerWorld, error) {
	r.m.FlushAll()
	tl := newMiniTimeline(r.m)
	mem, err := memory.NewBreaker(p, memory.WithClock(tl))
	if err != nil {
		return nil, err
	}
	red, err := redis.NewBreaker(r.c, "mc", p)
	if err != nil {
		return nil, err
	}
	var rg gate.ProviderGate = red
	if r.wrap != nil {
		rg = r.wrap(red)
	}
	w := newBreakerWorld(p, mem, rg, tl, 0, red.KeyTTL())
	w.snapEach = r.snapEach
	return w, nil
}

func (r *miniRig) quotaWorld(limits map[string]gate.Limits, lease time.Duration) (*quotaWorld, error) {
	r.m.FlushAll()
	tl := newMiniTimeline(r.m)
	mem, err := memory.NewQuota(limits, memory.WithClock(tl))
	if err != nil {
		return nil, err
	}
	red, err := redis.NewQuota(r.c, "mq", limits, redis.WithLease(lease))
	if err != nil {
		return nil, err
	}
	var rq gate.QuotaGate = red
	if r.wrapQuota != nil {
		rq = r.wrapQuota(red)
	}
	return newQuotaWorld(limits, mem, rq, tl, 0, lease), nil
}

// realRig runs worlds on a real redis-server and the wall clock; each world
// gets its own scope, so worlds may run in parallel.
type realRig struct {
	c     *goredis.Client
	scope atomic.Uint64
}

func (r *realRig) exact() bool { return false }

func (r *realRig) world(p gate.Policy) (*breakerWorld, error) {
	tl := newRealTimeline(realMargin)
	mem, err := memory.NewBreaker(p, memory.WithClock(tl))
	if err != nil {
		return nil, err
	}
	red, err := redis.NewBreaker(r.c, r.newScope(), p)
	if err != nil {
		return nil, err
	}
	w := newBreakerWorld(p, mem, red, tl, realTolerance, red.KeyTTL())
	w.snapEach = true // cheap next to the sleeps
	return w, nil
}

func (r *realRig) quotaWorld(limits map[string]gate.Limits, lease time.Duration) (*quotaWorld, error) {
	tl := newRealTimeline(realMargin)
	mem, err := memory.NewQuota(limits, memory.WithClock(tl))
	if err != nil {
		return nil, err
	}
	red, err := redis.NewQuota(r.c, r.newScope(), limits, redis.WithLease(lease))
	if err != nil {
		return nil, err
	}
	return newQuotaWorld(limits, mem, red, tl, realTolerance, lease), nil
}

func (r *realRig) newScope() string {
	return "mc-" + strconv.FormatUint(r.scope.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
