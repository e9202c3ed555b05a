package pgw_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The documented limit of a cancellation without a deadline: a call whose
// gate round trip waits on a Redis that went silent returns, once
// cancelled, at the Redis client's read timeout — the read_timeout of
// PGW_REDIS_URL, which bounds it (go-redis's 5 s when unset) — with the
// caller's context.Canceled, not as a gate error.
func TestAuditRedisCancelledCallWithoutDeadlineEndsAtTheURLsReadTimeout(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	gw, logs := loggedGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":            "redis",
		"PGW_REDIS_URL":                  "redis://" + px.Addr() + "/0?read_timeout=400ms",
		"PGW_REDIS_PREFIX":               "pgw-audit-cancel",
		"PGW_REDIS_PROBE_INTERVAL_S":     "20", // no probe during the test: the call alone meets the silence
		"PGW_REDIS_PROBE_TIMEOUT_S":      "5",
		"PGW_SCOPES":                     "RERANK",
		"RERANK__SOURCES":                "primary",
		"RERANK__PRIMARY__MAX_IN_FLIGHT": "4",
	}, slog.LevelInfo)

	px.SetMode(testutil.ProxyBlackhole)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := pgw.Call(ctx, gw, "RERANK", rerank)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call on a silent Redis did not return")
	}
	elapsed := time.Since(start)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, elapsed, 3*time.Second, "bounded by the URL's read_timeout (400 ms), not go-redis's default 5 s")
	assert.NotContains(t, logs.String(), "gate error", "the caller's cancellation is no gate error")
	px.SetMode(testutil.ProxyForward)
}
