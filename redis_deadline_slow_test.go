package pgw_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A call whose deadline passes while its admission waits on a slow Redis
// returns context.DeadlineExceeded — ctx.Err(), as for any caller whose
// ctx ended — and nothing blames the sources: no "gate error; source
// skipped" warning, no other source asked. The Redis client's socket
// deadline is the caller's, and its timer may fire a moment before the
// ctx's own; that is still the caller's deadline.
func TestRedisCallerDeadlineDuringASlowAdmissionIsTheCallersError(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	gw, logs := loggedGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":            "redis",
		"PGW_REDIS_URL":                  "redis://" + px.Addr() + "/0",
		"PGW_REDIS_PREFIX":               "pgw-test-" + t.Name(),
		"PGW_REDIS_PROBE_TIMEOUT_S":      "5", // the prober waits out the latency: no outage
		"PGW_REDIS_PROBE_INTERVAL_S":     "20",
		"PGW_SCOPES":                     "RERANK",
		"RERANK__SOURCES":                "primary,backup",
		"RERANK__PRIMARY__MAX_IN_FLIGHT": "4",
		"RERANK__BACKUP__RPM":            "100",
	}, slog.LevelInfo)

	px.SetLatency(100 * time.Millisecond)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := pgw.Call(ctx, gw, "RERANK", rerank)
		cancel()
		require.Equal(t, context.DeadlineExceeded, err, "call %d: %v", i, err)
	}
	assert.NotContains(t, logs.String(), "gate error", "the caller's deadline is no gate error")
	assert.False(t, strings.Contains(logs.String(), "level=WARN"), "no warning at all:\n%s", logs.String())
}
