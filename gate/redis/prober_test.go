package redis_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

const testProbeInterval = 100 * time.Millisecond

// proxiedClient is a client through a proxy that bounds each operation by
// the caller's deadline, as the gateway's client does.
func proxiedClient(t *testing.T, addr string) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		DialTimeout:           200 * time.Millisecond,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newTestProber(t *testing.T, c goredis.UniversalClient, prefix string, logs *logSink) *redis.Prober {
	t.Helper()
	pr, err := redis.NewProber(c,
		redis.WithProbeInterval(testProbeInterval),
		redis.WithProbeTimeout(30*time.Millisecond),
		redis.WithProbeBackoff(200*time.Millisecond),
		redis.WithHeartbeatTTL(time.Second),
		redis.WithProberPrefix(prefix),
		redis.WithProberLogger(slog.New(logs)))
	require.NoError(t, err)
	t.Cleanup(pr.Close)
	return pr
}

// outageRig is a source's Redis gates behind a proxy the test can black-hole,
// with the prober that judges the outage and the memory breaker every
// failover falls back to: what the outage tests build before choosing their
// failovers' modes and quota fallbacks.
type outageRig struct {
	px     *testutil.Proxy
	pr     *redis.Prober
	scope  string
	rb     *redis.Breaker
	rq     *redis.Quota
	rg     *redis.Budget
	mb     *memory.Breaker
	prefix string
}

// newOutageRig builds an outageRig whose keys start with name, the quota
// holding limits.
func newOutageRig(t *testing.T, name string, limits map[string]gate.Limits) outageRig {
	t.Helper()
	srv := testutil.StartRedis(t)
	r := outageRig{px: testutil.StartProxy(t, srv.Addr), prefix: name + uniqueScope(), scope: uniqueScope()}
	c := proxiedClient(t, r.px.Addr())
	r.pr = newTestProber(t, c, r.prefix, &logSink{})
	var err error
	r.rb, err = redis.NewBreaker(c, r.scope, gate.Policy{}, redis.WithPrefix(r.prefix))
	require.NoError(t, err)
	r.rq, err = redis.NewQuota(c, r.scope, limits, redis.WithPrefix(r.prefix))
	require.NoError(t, err)
	r.rg, err = redis.NewBudget(c, r.scope, redis.WithPrefix(r.prefix))
	require.NoError(t, err)
	r.mb, err = memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	return r
}

// blackholed builds the failovers over r's gates — the breaker's in
// breakerMode, the quota's fail_open over quotaFallback, the budget's over a
// memory budget — then black-holes Redis and waits for the prober to see it.
func (r outageRig) blackholed(t *testing.T, breakerMode redis.Mode, quotaFallback gate.QuotaGate) (*redis.Failover, *redis.QuotaFailover, *redis.BudgetFailover) {
	t.Helper()
	quiet := slog.New(&logSink{})
	b, err := redis.NewFailover(r.rb, r.mb, breakerMode, quiet, redis.WithProber(r.pr))
	require.NoError(t, err)
	q, err := redis.NewQuotaFailover(r.rq, quotaFallback, redis.FailOpen, quiet, redis.WithProber(r.pr))
	require.NoError(t, err)
	bg, err := redis.NewBudgetFailover(r.rg, memory.NewBudget(), quiet, redis.WithProber(r.pr))
	require.NoError(t, err)
	r.px.SetMode(testutil.ProxyBlackhole)
	require.True(t, waitFor(5*time.Second, r.pr.Down), "the prober must see the black hole")
	return b, q, bg
}

// waitFor polls cond every 5ms for at most limit and reports whether it
// became true.
func waitFor(limit time.Duration, cond func() bool) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

func TestNewProberRejectsBadOptions(t *testing.T) {
	c := goredisClient(t, "127.0.0.1:1")
	for name, opts := range map[string][]redis.ProberOption{
		"probe timeout":  {redis.WithProbeInterval(time.Second), redis.WithProbeTimeout(time.Second)},
		"probe interval": {redis.WithProbeInterval(0)},
		"probe backoff":  {redis.WithProbeBackoff(time.Millisecond)},
		"heartbeat ttl":  {redis.WithHeartbeatTTL(time.Millisecond)},
		"prefix":         {redis.WithProberPrefix("a{b")},
	} {
		_, err := redis.NewProber(c, opts...)
		var ae *redis.ArgumentError
		require.ErrorAs(t, err, &ae, name)
		assert.Equal(t, name, ae.Name)
	}
	_, err := redis.NewProber(nil)
	require.Error(t, err)
}

// A black-holed Redis is an outage for the prober after one probe timeout:
// fail_open callers serve locally at once instead of waiting for their
// deadline, fail_closed callers fail at once with ErrUnreachable, and the
// gates go back to Redis when the prober sees it answer.
func TestProberSeesABlackholeAndNobodyWaitsForIt(t *testing.T) {
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	px := testutil.StartProxy(t, srv.Addr)
	c := proxiedClient(t, px.Addr())
	logs := &logSink{}
	pr := newTestProber(t, c, "pgw", logs)
	scope := uniqueScope()

	rb, err := redis.NewBreaker(c, scope, gate.Policy{})
	require.NoError(t, err)
	mb, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	open, err := redis.NewFailover(rb, mb, redis.FailOpen, slog.New(logs), redis.WithProber(pr))
	require.NoError(t, err)
	closed, err := redis.NewFailover(rb, nil, redis.FailClosed, slog.New(logs), redis.WithProber(pr))
	require.NoError(t, err)

	require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 2 }))
	require.False(t, pr.Down())
	d, err := open.TryEnter(t.Context(), "s")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Zero(t, d.Token&(1<<63), "healthy: decided by redis")
	assert.False(t, open.LocalDecision(d), "a redis decision is given back through redis")

	px.SetMode(testutil.ProxyBlackhole)
	cut := time.Now()
	atCut, failuresAtCut := pr.Probes()
	var atDetection, failures int64
	require.True(t, waitFor(5*time.Second, func() bool {
		down := pr.Down()
		atDetection, failures = pr.Probes()
		return down
	}), "the prober must see the blackhole")
	t.Logf("blackhole detected after %v (interval %v)", time.Since(cut), testProbeInterval)
	// Within two probe intervals: at most three probes started after the
	// cut (one possibly under way at the cut, then the failed one and the
	// one that confirms it), and two failures decided the outage.
	assert.LessOrEqual(t, atDetection-atCut, int64(3), "probes from the cut to the outage")
	assert.LessOrEqual(t, failures-failuresAtCut, int64(2), "two failed probes in a row decide an outage")
	assert.GreaterOrEqual(t, failures, int64(2), "two failed probes in a row decide an outage")

	// During the outage no caller waits for Redis: a 5 s deadline is far
	// from reached; the counts show which gate answered.
	for range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		d, err := open.TryEnter(ctx, "s")
		require.NoError(t, err)
		assert.NotZero(t, d.Token&(1<<63), "during the outage: decided by the fallback")
		assert.True(t, open.LocalDecision(d), "given back without I/O")
		_, err = open.Record(ctx, "s", d, gate.Success)
		require.NoError(t, err)
		_, err = closed.TryEnter(ctx, "s")
		require.ErrorIs(t, err, redis.ErrUnreachable)
		assert.NoError(t, ctx.Err(), "the caller's deadline was not reached")
		cancel()
	}
	assert.True(t, open.Degraded())
	assert.True(t, closed.Degraded())

	px.SetMode(testutil.ProxyForward)
	require.True(t, waitFor(5*time.Second, func() bool { return !pr.Down() }), "the prober must see Redis again")
	d, err = open.TryEnter(t.Context(), "s")
	require.NoError(t, err)
	assert.Zero(t, d.Token&(1<<63), "after recovery: decided by redis again")
	_, err = closed.TryEnter(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, 1, logs.count(slog.LevelWarn), "one warning per outage")
	assert.Equal(t, 1, logs.count(slog.LevelInfo), "one recovery line per outage")
	warn := logs.attrs(slog.LevelWarn)
	assert.Equal(t, px.Addr(), warn["addr"], "the outage line names the Redis that went silent")
	assert.Equal(t, "fail_open", warn["mode"])
	assert.Equal(t, px.Addr(), logs.attrs(slog.LevelInfo)["addr"], "and so does the recovery line")

	pr.Close()
	pr.Close() // idempotent
	px.Close()
	_ = c.Close()
	require.True(t, waitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= base }),
		"goroutines leaked: %d > %d", runtime.NumGoroutine(), base)
}

// A caller's operation that finds Redis unreachable starts the outage
// before the next probe: the per-operation error is a second signal.
func TestCallersUnreachableErrorStartsTheProbersOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := proxiedClient(t, srv.Addr)
	logs := &logSink{}
	pr, err := redis.NewProber(c, redis.WithProbeInterval(time.Hour), redis.WithProbeTimeout(time.Second),
		redis.WithProbeBackoff(time.Hour), redis.WithHeartbeatTTL(2*time.Hour), redis.WithProberLogger(slog.New(logs)))
	require.NoError(t, err)
	defer pr.Close()
	require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 1 }))
	rq, err := redis.NewQuota(c, uniqueScope(), map[string]gate.Limits{"s": {MaxInFlight: 2}})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s": {MaxInFlight: 2}})
	require.NoError(t, err)
	f, err := redis.NewQuotaFailover(rq, mq, redis.FailOpen, slog.New(logs), redis.WithProber(pr))
	require.NoError(t, err)

	before, _ := pr.Probes()
	srv.Stop()
	_, d, err := f.Acquire(t.Context(), "s", 0)
	require.NoError(t, err)
	require.True(t, d.Allowed, "served by the fallback")
	assert.True(t, pr.Down(), "the caller's error started the outage")
	after, _ := pr.Probes()
	// The start-up probe may still be finishing when before is read; no
	// probe beyond it runs (the interval is an hour).
	assert.LessOrEqual(t, after-before, int64(1), "no probe ran in between")
}

// Close stops the prober's goroutine even while a probe is blocked on a
// silent Redis.
func TestProberCloseStopsItDuringABlackhole(t *testing.T) {
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	px := testutil.StartProxy(t, srv.Addr)
	px.SetMode(testutil.ProxyBlackhole)
	c := proxiedClient(t, px.Addr())
	pr := newTestProber(t, c, "pgw", &logSink{})
	require.True(t, waitFor(5*time.Second, pr.Down))
	pr.Close()
	px.Close()
	_ = c.Close()
	require.True(t, waitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= base }),
		"goroutines leaked: %d > %d", runtime.NumGoroutine(), base)
}

// The heartbeats count the processes alive in Redis; a process that stops
// beating drops out after the heartbeat TTL.
func TestProberCountsTheFleet(t *testing.T) {
	srv := testutil.StartRedis(t)
	prefix := "fleet" + uniqueScope()
	var prs []*redis.Prober
	for range 3 {
		prs = append(prs, newTestProber(t, proxiedClient(t, srv.Addr), prefix, &logSink{}))
	}
	require.True(t, waitFor(5*time.Second, func() bool { return prs[0].Processes() == 3 }), "got %d", prs[0].Processes())
	prs[2].Close()
	require.True(t, waitFor(5*time.Second, func() bool { return prs[0].Processes() == 2 }), "got %d", prs[0].Processes())
}

// N processes on one Redis, cut off from it: each one's fallback takes 1/N
// of every limit, so the fleet's in-flight calls and admissions stay within
// the limits (plus at most one per process).
func TestFleetShareKeepsTheFleetWithinItsLimitsDuringAnOutage(t *testing.T) {
	const (
		procs       = 3
		maxInFlight = 6
		rpm         = 30
		workers     = 8
	)
	srv := testutil.StartRedis(t)
	base := runtime.NumGoroutine()
	prefix := "share" + uniqueScope()
	scope := uniqueScope()
	limits := map[string]gate.Limits{"s": {MaxInFlight: maxInFlight, RPM: rpm}}
	type proc struct {
		px *testutil.Proxy
		pr *redis.Prober
		q  *redis.QuotaFailover
		fq *redis.FleetQuota
		c  *goredis.Client
	}
	var ps []proc
	for range procs {
		px := testutil.StartProxy(t, srv.Addr)
		c := proxiedClient(t, px.Addr())
		pr := newTestProber(t, c, prefix, &logSink{})
		rq, err := redis.NewQuota(c, scope, limits, redis.WithPrefix(prefix))
		require.NoError(t, err)
		fq, err := redis.NewFleetQuota(limits, pr)
		require.NoError(t, err)
		q, err := redis.NewQuotaFailover(rq, fq, redis.FailOpen, slog.New(&logSink{}), redis.WithProber(pr))
		require.NoError(t, err)
		ps = append(ps, proc{px, pr, q, fq, c})
	}
	for _, p := range ps {
		require.True(t, waitFor(5*time.Second, func() bool { return p.pr.Processes() == procs }))
	}
	assert.Equal(t, gate.Limits{MaxInFlight: 2, RPM: 10}, ps[0].fq.Share("s"))
	for _, p := range ps {
		p.px.SetMode(testutil.ProxyReset)
	}
	for _, p := range ps {
		require.True(t, waitFor(5*time.Second, p.pr.Down))
	}

	var inFlight, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(500 * time.Millisecond)
	for _, p := range ps {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					pm, d, err := p.q.Acquire(context.Background(), "s", 0)
					if err != nil {
						t.Error(err)
						return
					}
					if !d.Allowed {
						time.Sleep(time.Millisecond)
						continue
					}
					admitted.Add(1)
					n := inFlight.Add(1)
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					time.Sleep(2 * time.Millisecond)
					inFlight.Add(-1)
					if err := p.q.Release(context.Background(), pm); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("fleet of %d during the outage: peak in flight %d (limit %d), admitted %d in 0.5 s (RPM %d)",
		procs, peak.Load(), maxInFlight, admitted.Load(), rpm)
	assert.LessOrEqual(t, peak.Load(), int64(maxInFlight), "fleet in flight")
	// Half a second refills 1/120 of a minute: the burst of each share and
	// at most one more admission per process.
	assert.LessOrEqual(t, admitted.Load(), int64(rpm+procs), "fleet admissions")
	assert.GreaterOrEqual(t, admitted.Load(), int64(rpm), "each share's burst is available")
	for _, p := range ps {
		assert.Zero(t, p.fq.InFlight("s"), "every local slot given back")
	}

	for _, p := range ps {
		p.px.SetMode(testutil.ProxyForward)
	}
	for _, p := range ps {
		require.True(t, waitFor(5*time.Second, func() bool { return !p.pr.Down() }))
	}
	for _, p := range ps {
		p.pr.Close()
		p.px.Close()
		_ = p.c.Close()
	}
	require.True(t, waitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= base }),
		"goroutines leaked: %d > %d", runtime.NumGoroutine(), base)
}

// A permit goes back to the share that granted it after the fleet's size
// changed, and an estimate above the share of TPM but within the whole TPM
// reserves the share instead of failing.
func TestFleetQuotaAcrossAChangeOfTheFleetsSize(t *testing.T) {
	srv := testutil.StartRedis(t)
	prefix := "resize" + uniqueScope()
	pr := newTestProber(t, proxiedClient(t, srv.Addr), prefix, &logSink{})
	require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 1 }))
	require.Equal(t, 1, pr.Processes())
	fq, err := redis.NewFleetQuota(map[string]gate.Limits{"s": {MaxInFlight: 3, TPM: 90}}, pr)
	require.NoError(t, err)
	ctx := t.Context()

	old, d, err := fq.Acquire(ctx, "s", 10)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, 1, fq.InFlight("s"))

	for range 2 {
		newTestProber(t, proxiedClient(t, srv.Addr), prefix, &logSink{})
	}
	require.True(t, waitFor(5*time.Second, func() bool { return pr.Processes() == 3 }))
	assert.Equal(t, gate.Limits{MaxInFlight: 1, TPM: 30}, fq.Share("s"))

	big, d, err := fq.Acquire(ctx, "s", 60)
	require.NoError(t, err, "60 tokens fit the whole TPM of 90")
	require.True(t, d.Allowed, "the share's whole bucket is reserved")
	_, d, err = fq.Acquire(ctx, "s", 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the share (1 in flight, 30 TPM) is used up")
	_, _, err = fq.Acquire(ctx, "s", 91)
	var te *gate.TokensError
	require.ErrorAs(t, err, &te, "more than the whole TPM never fits")
	assert.Equal(t, int64(91), te.Tokens)
	assert.Equal(t, 90, te.TPM)

	require.NoError(t, fq.Finish(ctx, old, 10), "the permit of the old share goes back to it")
	require.NoError(t, fq.Release(ctx, big))
	assert.Zero(t, fq.InFlight("s"))
}

// Under fail_closed too, a caller's operation that finds Redis unreachable
// starts the prober's outage at once: the calls after it fail at once with
// ErrUnreachable instead of each dialling a dead Redis until the next probe.
func TestFailClosedCallersUnreachableErrorStartsTheProbersOutage(t *testing.T) {
	srv := testutil.StartRedis(t)
	scope := uniqueScope()
	limits := map[string]gate.Limits{"s": {MaxInFlight: 2}}
	ops := map[string]func(b *redis.Failover, q *redis.QuotaFailover) error{
		"TryEnter": func(b *redis.Failover, _ *redis.QuotaFailover) error {
			_, err := b.TryEnter(t.Context(), "s")
			return err
		},
		"Acquire": func(_ *redis.Failover, q *redis.QuotaFailover) error {
			_, _, err := q.Acquire(t.Context(), "s", 0)
			return err
		},
		"Admit": func(b *redis.Failover, q *redis.QuotaFailover) error {
			_, _, _, _, err := q.Admit(t.Context(), b, "s", 0)
			return err
		},
	}
	first := true
	for name, op := range ops {
		if !first {
			srv.Restart(t)
		}
		first = false
		// A client of its own: go-redis's pool, once as many dials as its
		// size have failed (the previous operations' during its Stop), fails
		// every dial at once until a background dial, once a second,
		// succeeds, and this prober's two first probes would start an
		// outage that its hour-long backoff never ends.
		c := proxiedClient(t, srv.Addr)
		rb, err := redis.NewBreaker(c, scope, gate.Policy{})
		require.NoError(t, err)
		rq, err := redis.NewQuota(c, scope, limits)
		require.NoError(t, err)
		logs := &logSink{}
		pr, err := redis.NewProber(c, redis.WithProbeInterval(time.Hour), redis.WithProbeTimeout(time.Second),
			redis.WithProbeBackoff(time.Hour), redis.WithHeartbeatTTL(2*time.Hour), redis.WithProberLogger(slog.New(logs)),
			redis.WithProberMode(redis.FailClosed))
		require.NoError(t, err)
		require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 1 && !pr.Down() }), name)
		b, err := redis.NewFailover(rb, nil, redis.FailClosed, slog.New(logs), redis.WithProber(pr))
		require.NoError(t, err)
		q, err := redis.NewQuotaFailover(rq, nil, redis.FailClosed, slog.New(logs), redis.WithProber(pr))
		require.NoError(t, err)

		srv.Stop()
		require.ErrorIs(t, op(b, q), redis.ErrUnreachable, name)
		assert.True(t, pr.Down(), "%s: the caller's unreachable error started the outage", name)
		warn := logs.attrs(slog.LevelWarn)
		assert.Equal(t, srv.Addr, warn["addr"], "%s: the fail_closed outage line names the Redis", name)
		assert.Equal(t, "fail_closed", warn["mode"], name)
		pr.Close()
	}
}
