package pgw_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A gateway built from the environment runs its prober on the
// PGW_REDIS_PROBE_* and PGW_REDIS_HEARTBEAT_TTL_S keys: its heartbeat in
// Redis lives the configured TTL and is renewed every interval, and a
// black hole is an outage within about two intervals.
func TestRedisProberRunsOnTheProbeKeys(t *testing.T) {
	// Short, but with a probe timeout (100 ms) that a healthy loopback
	// Redis answers within even on a loaded machine: a probe that timed out
	// there would be an outage, and the first call would fail.
	const interval = 200 * time.Millisecond
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
	env["PGW_REDIS_DOWN"] = "fail_closed" // an outage shows as ErrUnreachable at once
	env["PGW_REDIS_PROBE_INTERVAL_S"] = "0.2"
	env["PGW_REDIS_PROBE_TIMEOUT_S"] = "0.1"
	env["PGW_REDIS_PROBE_BACKOFF_S"] = "0.4"
	env["PGW_REDIS_HEARTBEAT_TTL_S"] = "1"
	gw, _ := newGateway(t, env)
	_, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)

	// The heartbeat's expiry, in ms after the server's now: at most the TTL
	// (1 s, not the default 3 s), and it moves every interval.
	left := func() int64 {
		out, err := srv.Do("EVAL", `
local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local t = redis.call('TIME')
if #r == 0 then return -1 end
return tonumber(r[2]) - (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))`,
			"1", env["PGW_REDIS_PREFIX"]+":{pgw-fleet}:alive")
		require.NoError(t, err)
		n, err := strconv.ParseInt(out, 10, 64)
		require.NoError(t, err)
		return n
	}
	renewals, last := 0, int64(-1)
	for deadline := time.Now().Add(6 * interval); time.Now().Before(deadline); {
		n := left()
		require.Positive(t, n, "one heartbeat alive")
		require.LessOrEqual(t, n, int64(1000), "the heartbeat lives PGW_REDIS_HEARTBEAT_TTL_S")
		if n > last {
			renewals++
		}
		last = n
		time.Sleep(10 * time.Millisecond) // sampling the server, not waiting for a goroutine
	}
	t.Logf("heartbeat renewed %d times in %v", renewals, 6*interval)
	assert.GreaterOrEqual(t, renewals, 4, "renewed every interval (the default, 500 ms, would renew at most three times)")

	px.SetMode(testutil.ProxyBlackhole)
	start := time.Now()
	var detected time.Duration
	for detected == 0 && time.Since(start) < 5*time.Second {
		// Until the outage starts a call waits for the black hole up to
		// its deadline; then it fails at once.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
		cancel()
		if errors.Is(err, redis.ErrUnreachable) {
			detected = time.Since(start)
		}
	}
	t.Logf("black hole seen as an outage after %v (interval %v)", detected.Round(time.Millisecond), interval)
	require.NotZero(t, detected, "the outage was seen")
	// Two intervals, and a generous allowance for a loaded machine; the
	// default interval (500 ms) would take up to 1 s.
	assert.Less(t, detected, 2*interval+500*time.Millisecond)

	px.SetMode(testutil.ProxyForward)
	assert.Eventually(t, func() bool {
		_, err := gw.Chat(context.Background(), hello())
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "back on Redis within the backoff")
}
