package pgw_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// onRedis adds to env the keys that put its gates on srv, under a prefix
// of the test's own.
func onRedis(t *testing.T, srv *testutil.RedisServer, env map[string]string) map[string]string {
	env["PGW_BREAKER_BACKEND"] = "redis"
	env["PGW_REDIS_URL"] = "redis://" + srv.Addr + "/0"
	env["PGW_REDIS_PREFIX"] = "pgw-test-" + t.Name()
	return env
}

// Two gateways on one Redis take their admissions from one advertised
// remaining: after an answer saying 3 are left, the fleet sends 3 more
// requests in all — whichever gateway sends them — and both then refuse
// with the reset.
func TestTheFleetSendsNoMoreThanTheAdvertisedRemaining(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, func() http.Header { return requestsLeft("60", "3", "45s") })
	env := onRedis(t, srv, soloChat(adv.URL))
	gw1, _ := newGateway(t, env)
	gw2, _ := newGateway(t, env)
	ctx := context.Background()
	for i, gw := range []*pgw.GatewayClient{gw1, gw2, gw1, gw2} {
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, err, "call %d", i)
	}
	for i, gw := range []*pgw.GatewayClient{gw1, gw2} {
		_, err := gw.Chat(ctx, hello())
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase, "gateway %d", i+1)
		assert.Equal(t, "rate_limited", ase.Reasons["solo"])
		assert.InDelta(t, 45, ase.RetryAfter.Seconds(), 2)
	}
	assert.Equal(t, int64(4), adv.hits.Load(), "the first answer's call and the 3 it left")
}

// No thundering herd at the reset: eight callers waiting under
// QUOTA_FULL=wait for a spent window of 3 (in one gateway, or spread over
// two sharing Redis) send exactly 3 requests when the window resets; when
// those answer that the new window is spent for 30 s, the other five end
// at once with the quota error rather than at their deadline.
func TestNoHerdAtTheAdvertisedReset(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			u := newHeldUpstream(t)
			env := soloChat(u.URL, "CHAT__SOLO__MAX_IN_FLIGHT", "100", "CHAT__QUOTA_FULL", "wait")
			gws := make([]*pgw.GatewayClient, 1, 2)
			if backend == "redis" {
				env = onRedis(t, testutil.StartRedis(t), env)
				gws = gws[:2]
			}
			for i := range gws {
				gws[i], _ = newGateway(t, env)
			}
			u.answer(requestsLeft("3", "0", "1s"))
			_, err := gws[0].Chat(context.Background(), hello())
			require.NoError(t, err)
			u.awaitArrivals(t, 1)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const callers = 8
			var wg sync.WaitGroup
			errs := make([]error, callers)
			for i := range callers {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = gws[i%len(gws)].Chat(ctx, hello()) }()
			}
			u.awaitArrivals(t, 3)
			// Not a synchronisation: a herd would show as more requests
			// arriving in this moment, which nothing else would signal.
			time.Sleep(300 * time.Millisecond)
			assert.Equal(t, int64(1+3), u.hits.Load(), "the reset let exactly the window's 3 through")
			for range 3 {
				u.answer(requestsLeft("3", "0", "30s"))
			}
			wg.Wait()
			require.NoError(t, ctx.Err(), "nobody slept into the deadline")
			var ok int
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				var ase *pgw.AllSourcesExhausted
				require.ErrorAs(t, err, &ase)
				assert.InDelta(t, 30, ase.RetryAfter.Seconds(), 2)
			}
			assert.Equal(t, 3, ok)
			assert.Equal(t, int64(1+3), u.hits.Load())
		})
	}
}

// A wait the fleet's shared state makes certain — another gateway's trip
// of the breaker, its use of the RPM, its advertised budget — ends a
// waiting call at once when it ends past the caller's deadline.
func TestFleetWaitsPastTheDeadlineEndAtOnce(t *testing.T) {
	srv := testutil.StartRedis(t)
	t.Run("breaker cooldown", func(t *testing.T) {
		env, up := singleSource(t, "wait", "60")
		env = onRedis(t, srv, env)
		gw1, _ := newGateway(t, env)
		gw2, _ := newGateway(t, env)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := gw1.Chat(ctx, hello())
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "the 503 opened the shared breaker")
		_, err = gw2.Chat(ctx, hello())
		require.NoError(t, ctx.Err(), "the other gateway did not sleep into its deadline")
		require.ErrorAs(t, err, &coe)
		assert.InDelta(t, 60, coe.RetryAfter.Seconds(), 2)
		assert.Equal(t, 1, up.Requests(testutil.Chat))
	})
	t.Run("RPM", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		env := onRedis(t, srv, soloChat(up.URL, "CHAT__QUOTA_FULL", "wait", "CHAT__SOLO__RPM", "1"))
		gw1, _ := newGateway(t, env)
		gw2, _ := newGateway(t, env)
		_, err := gw1.Chat(context.Background(), hello())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = gw2.Chat(ctx, hello())
		require.NoError(t, ctx.Err(), "the other gateway did not sleep into its deadline")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.Greater(t, ase.RetryAfter, 3*time.Second, "the refill is past the deadline")
		assert.Equal(t, 1, up.Requests(testutil.Chat))
	})
	t.Run("advertised budget", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		adv := newAdvertiser(t, up, spentOpenAI("45s"))
		env := onRedis(t, srv, soloChat(adv.URL, "CHAT__QUOTA_FULL", "wait"))
		gw1, _ := newGateway(t, env)
		gw2, _ := newGateway(t, env)
		// gw1's call spends the fleet's budget with its first answer,
		// whatever that answer is: a failed attempt's headers count too.
		// (Its outcome is not asserted: an attempt cut on a loaded machine
		// would leave it refused by the very budget it spent.)
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer pcancel()
		_, _ = gw1.Chat(pctx, hello())
		require.NoError(t, pctx.Err(), "gw1 did not sleep into its deadline either")
		sent := adv.hits.Load()
		require.GreaterOrEqual(t, sent, int64(1), "gw1 reached the upstream")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := gw2.Chat(ctx, hello())
		require.NoError(t, ctx.Err(), "the other gateway did not sleep into its deadline")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, "rate_limited", ase.Reasons["solo"])
		assert.InDelta(t, 45, ase.RetryAfter.Seconds(), 2)
		assert.Equal(t, sent, adv.hits.Load(), "the other gateway sent nothing")
	})
}

// LIMITS_FROM_HEADERS holds across the fleet: with the advertised 90 left
// replacing RPM 1, two gateways on one Redis run four calls between them.
func TestLimitsFromHeadersReplaceTheFleetsRPM(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, func() http.Header { return requestsLeft("100", "90", "30s") })
	for _, lfh := range []string{"false", "true"} {
		env := onRedis(t, srv, soloChat(adv.URL, "CHAT__SOLO__RPM", "1", "CHAT__SOLO__LIMITS_FROM_HEADERS", lfh))
		env["PGW_REDIS_PREFIX"] += "-" + lfh
		gw1, _ := newGateway(t, env)
		gw2, _ := newGateway(t, env)
		var refused int
		for _, gw := range []*pgw.GatewayClient{gw1, gw2, gw1, gw2} {
			if _, err := gw.Chat(context.Background(), hello()); err != nil {
				var ase *pgw.AllSourcesExhausted
				require.ErrorAs(t, err, &ase)
				refused++
			}
		}
		if lfh == "true" {
			assert.Zero(t, refused, "the advertised limits replace RPM 1")
		} else {
			assert.Equal(t, 3, refused, "RPM 1 holds the fleet to one call")
		}
	}
}
