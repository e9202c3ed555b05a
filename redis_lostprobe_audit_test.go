package pgw_test

import (
	"context"
	"testing"

	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A call whose deadline passes while the shared breaker grants it the
// probe — the admission script ran on Redis, its reply came too late — ends
// with context.DeadlineExceeded and leaves no probe lease behind: the next
// call of the scope probes the recovered source and succeeds, instead of
// being rejected ("a probe is in flight") until PROBE_TTL_S (60 s here);
// nor is the in-flight slot the script took kept. Observers see the call
// that gave up as canceled.
func TestAuditRedisProbeGrantedToACallThatGaveUpIsFreed(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: 503})
	gw, rec := newGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":        "redis",
		"PGW_REDIS_URL":              "redis://" + px.Addr() + "/0",
		"PGW_REDIS_PREFIX":           "pgw-test-lostprobe",
		"PGW_REDIS_PROBE_TIMEOUT_S":  "5", // the prober waits out the latency: no outage
		"PGW_REDIS_PROBE_INTERVAL_S": "20",
		"CHAT__SOURCES":              "solo",
		"CHAT__SOLO__BASE_URL":       up.URL,
		"CHAT__SOLO__MAX_IN_FLIGHT":  "1",
		"CHAT__QUOTA_FULL":           "fail_fast", // a slot still taken fails the next call at once
		"CHAT__FAILURE_THRESHOLD":    "1",
		"CHAT__COOLDOWN_S":           "0.1",
		"CHAT__PROBE_TTL_S":          "60",
	})
	_, err := gw.Chat(context.Background(), hello())
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe, "one failure opens the breaker")
	require.Eventually(t, func() bool {
		snap, err := gw.Snapshot(context.Background(), "CHAT", "solo")
		return err == nil && snap.State == pgw.StateOpen && snap.RetryAfter == 0
	}, 10*time.Second, 10*time.Millisecond, "the cooldown passes")

	// 100 ms each way: the admission runs at 100 ms, its reply arrives at
	// 200 ms, after the caller's deadline.
	px.SetLatency(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	_, err = gw.Chat(ctx, hello())
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	px.SetLatency(0)

	// The leases are freed off the caller's path: a call that comes before
	// that fails fast on the probe in flight or the slot taken, no longer.
	var last error
	assert.Eventually(t, func() bool { _, last = gw.Chat(context.Background(), hello()); return last == nil },
		5*time.Second, 20*time.Millisecond, "the probe granted to the call that gave up is still taken")
	require.NoError(t, last)
	assert.Equal(t, 2, up.Requests(testutil.Chat), "the failure and the probe; the call that gave up sent nothing")
	// The caller's deadline is reported as such, also when the Redis
	// client's socket timer, set from it, fired a moment before ctx did.
	assert.Equal(t, pgw.ResultCanceled, rec.Results()[1], "the call that gave up: %v", rec.Results())
}
