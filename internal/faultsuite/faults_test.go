package faultsuite_test

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	fs "github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Results every scenario with failing upstreams allows.
var storm = []string{fs.ResultCircuitOpen, fs.ResultStalled, fs.ResultUnavailable}

// lostReplies are the results a fault that loses Redis replies may add: an
// Acquire that ran although its caller saw an error, or a Release that
// never ran (after a restart, on a connection to the dead server), leaves
// an in-flight lease until it expires; enough of them fill TOOL's slots, and
// its calls wait, then stall.
var lostReplies = []string{fs.ResultStalled}

// killAndRestart takes Redis away under load for 0.6 s and brings it back
// empty. Probes may overlap from the kill until the gateways are back on
// Redis (fail_open tries it once a second): the restarted server forgot
// every lease. The load then runs on for 0.8 s, in which probes are one per
// lease again.
func killAndRestart(r *rig) []fs.Interval {
	r.sleep(300 * time.Millisecond)
	killed := time.Now()
	r.redis.Stop()
	r.sleep(600 * time.Millisecond)
	r.redis.Restart(r.t)
	restarted := time.Now()
	r.sleep(2000 * time.Millisecond)
	return []fs.Interval{window(killed, restarted.Add(1200*time.Millisecond))}
}

func TestRedisKilledAndRestartedUnderLoadFailOpen(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		ownRedis: true,
		allowed:  storm, // lostReplies' stalled among them
		upstream: flakyFirst,
		fault:    killAndRestart,
		// A second outage after the load: each process's local quota must
		// still have every slot of its share (MAX_IN_FLIGHT over the 3
		// processes alive in Redis), so the outage's permits all came back.
		capacity: func(r *rig, f *fs.Fleet) {
			r.redis.Stop()
			requireCapacityOf(r, f, max(toolInFlight/3, 1))
			r.redis.Restart(r.t)
		},
	})
	assert.NotEmpty(t, res.report.Outages, "the gateways served from their local gates")
	assert.Positive(t, len(res.report.Probes), "breakers probed around the outage")
}

func TestRedisKilledAndRestartedUnderLoadFailClosed(t *testing.T) {
	res := run(t, scenario{
		mode:    "fail_closed",
		workers: 3, goroutines: 16,
		ownRedis: true,
		allowed:  append([]string{fs.ResultRedisDown}, lostReplies...),
		fault:    killAndRestart,
	})
	assert.Positive(t, res.report.Results[fs.ResultRedisDown], "fail_closed calls failed while Redis was down")
	assert.Empty(t, res.report.Outages, "fail_closed never serves locally")
}

// flakyFirst makes upstream 1 answer 503 to three requests in four, so
// that the breakers of its sources (a, e, t1) keep opening, probing and
// closing while a Redis fault runs: the check of at most one probe per
// lease has probes to look at.
func flakyFirst(r *rig) {
	for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings} {
		r.up1.SetScript(ep, func(n int) testutil.Reply {
			if n%4 != 0 {
				return testutil.Reply{Status: http.StatusServiceUnavailable}
			}
			return testutil.Reply{}
		})
	}
}

func TestScriptFlushUnderLoad(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		allowed:  storm,
		upstream: flakyFirst,
		fault: func(r *rig) []fs.Interval {
			for range 15 {
				r.sleep(100 * time.Millisecond)
				_, err := r.redis.Do("SCRIPT", "FLUSH")
				require.NoError(r.t, err)
			}
			r.sleep(300 * time.Millisecond)
			return nil
		},
	})
	// NOSCRIPT is answered by EVAL at once: no outage, no gate error; the
	// only warnings are the flaky upstream's breakers changing state.
	assert.Empty(t, res.report.Outages)
	for msg := range res.report.Warnings {
		assert.Equal(t, "pgw: breaker state changed", msg, "a warning other than the breakers' own")
	}
	assert.Positive(t, len(res.report.Probes), "breakers probed while the script cache was flushed")
}

func TestClientKillUnderLoad(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		ownRedis: true,
		allowed:  lostReplies,
		fault: func(r *rig) []fs.Interval {
			first := time.Now()
			for range 8 {
				r.sleep(150 * time.Millisecond)
				_, err := r.redis.Do("CLIENT", "KILL", "TYPE", "normal")
				require.NoError(r.t, err)
			}
			last := time.Now()
			r.sleep(1200 * time.Millisecond)
			// A killed connection is an outage to fail_open (logged, so
			// excused from the reports); the window covers the rest.
			return []fs.Interval{window(first, last.Add(1200*time.Millisecond))}
		},
	})
	// The kills cut the workers' connections under their gate round trips:
	// the invariants above held through the fault, not beside it.
	l := res.report.Lost
	assert.Positive(t, l.Acquire+l.Release+l.TryEnter+l.Record+l.Other, "gate round trips lost to the killed connections")
}

// DEBUG SLEEP 0.3 stalls Redis longer than the operation timeout (the
// client's read timeout, 100 ms): gate operations time out instead of
// holding calls for the whole sleep.
func TestSlowRedisAgainstTheOperationTimeout(t *testing.T) {
	for _, mode := range []string{"fail_open", "fail_closed"} {
		t.Run(mode, func(t *testing.T) {
			allowed := lostReplies
			if mode == "fail_closed" {
				allowed = append([]string{fs.ResultRedisDown}, lostReplies...)
			}
			res := run(t, scenario{
				mode:    mode,
				workers: 2, goroutines: 16,
				ownRedis: true, readTimeout: 100 * time.Millisecond,
				allowed: allowed,
				fault: func(r *rig) []fs.Interval {
					first := time.Now()
					for range 3 {
						r.sleep(300 * time.Millisecond)
						_, err := r.redis.Do("DEBUG", "SLEEP", "0.3")
						require.NoError(r.t, err, "DEBUG needs --enable-debug-command (testutil passes it to Redis ≥ 7)")
					}
					last := time.Now()
					r.sleep(1200 * time.Millisecond)
					return []fs.Interval{window(first, last.Add(1200*time.Millisecond))}
				},
			})
			// Gate operations gave up at the timeout rather than waiting
			// the sleeps out: fail_open served from its local gates,
			// fail_closed failed calls as Redis being unreachable.
			if mode == "fail_open" {
				assert.NotEmpty(t, res.report.Outages, "timed-out gate operations took the gateways to their local gates")
			} else {
				assert.Positive(t, res.report.Results[fs.ResultRedisDown], "timed-out gate operations failed calls as redis unreachable")
			}
		})
	}
}

// stormFor sets reply on both upstreams for d, then restores success and
// lets the breakers close again.
func stormFor(reply testutil.Reply, d time.Duration) func(r *rig) []fs.Interval {
	return func(r *rig) []fs.Interval {
		r.sleep(300 * time.Millisecond)
		r.each(&reply)
		r.sleep(d)
		r.each(nil)
		r.sleep(1200 * time.Millisecond)
		return nil
	}
}

func TestUpstream5xxStorm(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		allowed: storm,
		fault:   stormFor(testutil.Reply{Status: http.StatusServiceUnavailable}, time.Second),
	})
	assert.Positive(t, len(res.report.Probes), "the breakers opened and probed")
}

func TestUpstream429StormWithRetryAfter(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		allowed: append([]string{fs.ResultQuotaExhausted}, storm...),
		// pgw holds the source off before it gives the 429's ticket back
		// and reads the memo again after the gates answered, so only
		// goroutine scheduling is left between the watch and the memo
		// (0 violations at a 2 ms slack under load; before, the gates'
		// round trips made 29–32).
		raGrace: 50 * time.Millisecond,
		fault:   stormFor(testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}, time.Second),
	})
	// A hold-off the upstream asked for is a quota-like rejection: it ends
	// calls as quota_exhausted at once when it outlasts the call's deadline
	// (every scope waits for quota here).
	assert.Positive(t, res.report.Results[fs.ResultQuotaExhausted]+res.report.Results[fs.ResultStalled],
		"calls were held off by Retry-After")
}

// cutScript cuts one chat answer in three after its first content chunk and
// one in seven before any, and drops one embedding connection in five.
func cutScript(r *rig) {
	for _, up := range []*testutil.Upstream{r.up1, r.up2} {
		up.SetScript(testutil.Chat, func(n int) testutil.Reply {
			switch {
			case n%3 == 0:
				return testutil.Reply{Cut: true, CutAfter: 1}
			case n%7 == 0:
				return testutil.Reply{Cut: true, CutAfter: 0}
			}
			return testutil.Reply{}
		})
		up.SetScript(testutil.Embeddings, func(n int) testutil.Reply {
			return testutil.Reply{Cut: n%5 == 0}
		})
	}
}

func TestStreamsCutMidAnswer(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		mix:      map[string]int{fs.OpChat: 4, fs.OpStream: 4, fs.OpEmbed: 1, fs.OpTool: 1},
		abandon:  0.3,
		allowed:  append([]string{fs.ResultCut}, storm...),
		upstream: cutScript,
		fault: func(r *rig) []fs.Interval {
			r.sleep(2000 * time.Millisecond)
			return nil
		},
	})
	assert.Positive(t, res.report.Results[fs.ResultCut], "streams were cut after their first chunk")
	assert.Positive(t, res.report.Results[fs.ResultAbandoned], "streams were abandoned")
}

// slowScript delays first tokens by 0–19 ms and fails one request in ten,
// so that cancellations land in admission, in the upstream, mid-stream, in
// backoff and in waits.
func slowScript(r *rig) {
	for _, up := range []*testutil.Upstream{r.up1, r.up2} {
		for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings} {
			up.SetScript(ep, func(n int) testutil.Reply {
				if n%10 == 0 {
					return testutil.Reply{Status: http.StatusBadGateway}
				}
				return testutil.Reply{FirstTokenDelay: time.Duration(n*7%20) * time.Millisecond}
			})
		}
	}
}

// cancelBound is how soon a cancelled call must return. A call that ignored
// its cancellation would wait out a backoff, a cooldown or the stall window
// here (200 ms to 1 s); the bound leaves room for a loaded machine's
// scheduling (calls returned up to 313 ms after their cancellation on two
// cores shared with other test runs), as the soak's does.
const cancelBound = 500 * time.Millisecond

func TestCallerCancellationsAtRandomPoints(t *testing.T) {
	res := run(t, scenario{
		workers: 3, goroutines: 16,
		cancelRate: 0.5, cancelBound: cancelBound,
		abandon:  0.2,
		allowed:  append([]string{fs.ResultCanceled}, storm...),
		upstream: slowScript,
		fault: func(r *rig) []fs.Interval {
			r.sleep(2000 * time.Millisecond)
			return nil
		},
	})
	assert.Positive(t, res.report.Results[fs.ResultCanceled], "calls were cancelled")
}

// The memory backend under the same cancellations, cut streams and
// failures: no shared state to read, so every slot is proven free by
// holding all of them at once after the load.
func TestMemoryBackendGivesEverythingBackUnderFaults(t *testing.T) {
	run(t, scenario{
		backend: "memory",
		workers: 2, goroutines: 16,
		cancelRate: 0.3, cancelBound: cancelBound,
		abandon: 0.2,
		allowed: append([]string{fs.ResultCanceled, fs.ResultCut}, storm...),
		upstream: func(r *rig) {
			cutScript(r)
		},
		fault: func(r *rig) []fs.Interval {
			r.sleep(800 * time.Millisecond)
			r.each(&testutil.Reply{Status: http.StatusInternalServerError})
			r.sleep(500 * time.Millisecond)
			cutScript(r)
			r.sleep(1200 * time.Millisecond)
			return nil
		},
		capacity: requireCapacity,
	})
}

// A caller's deadline bounds a gate operation on a stalled Redis: the
// gateway's own client (PGW_REDIS_URL, default read timeout 5 s) sets its
// socket deadlines from the call's ctx. Before, a call with a 100 ms deadline
// returned when Redis woke up.
func TestCallerDeadlineBoundsGateOperationsOnASlowRedis(t *testing.T) {
	for _, mode := range []string{"fail_open", "fail_closed"} {
		t.Run(mode, func(t *testing.T) {
			r := &rig{t: t, up1: testutil.NewUpstream(t), up2: testutil.NewUpstream(t), prefix: "pgw-fault-deadline"}
			r.redis = testutil.StartRedis(t)
			s, err := config.FromMap(scenario{mode: mode, backend: "redis"}.env(r))
			require.NoError(t, err)
			gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.DiscardHandler)))
			require.NoError(t, err)
			defer gw.Close()
			in := pgw.EmbedRequest{Inputs: []string{"x"}}
			_, err = gw.Embed(context.Background(), in)
			require.NoError(t, err, "warm: scripts loaded, connections pooled")

			slept := make(chan error, 1)
			go func() {
				_, err := r.redis.Do("DEBUG", "SLEEP", "1.5")
				slept <- err
			}()
			require.True(t, waitAsleep(r.redis.Addr), "Redis went to sleep")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = gw.Embed(ctx, in)
			took := time.Since(start)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, took, 600*time.Millisecond, "returned %v after the call began, Redis asleep for 1.5 s", took)
			require.NoError(t, <-slept)
		})
	}
}

// waitAsleep reports, within 2 s, that the server at addr stopped answering
// PING within 50 ms.
func waitAsleep(addr string) bool {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, 50*time.Millisecond)
		if err != nil {
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(50 * time.Millisecond))
		_, err = conn.Write([]byte("PING\r\n"))
		if err == nil {
			_, err = bufio.NewReader(conn).ReadString('\n')
		}
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return true
		}
	}
	return false
}
