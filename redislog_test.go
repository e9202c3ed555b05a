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

// syncBuffer is a log's output a test reads while the gateway writes it.
type syncBuffer = testutil.LogBuffer

// TestGoRedisLogsGoThroughTheGatewayLogger: with Redis down, go-redis's own
// "failed to dial" lines reach the gateway's logger (at Debug), not stderr,
// and pgw's warning about the outage is there once.
func TestGoRedisLogsGoThroughTheGatewayLogger(t *testing.T) {
	var logs syncBuffer
	l := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := mustSettings(t, map[string]string{
		"PGW_BREAKER_BACKEND": "redis", "PGW_REDIS_URL": "redis://:sk-REDIS-PW@127.0.0.1:1/0?dial_timeout=50ms",
		"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "a",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	gw, err := pgw.New(ctx, *s, pgw.WithLogger(l))
	require.NoError(t, err, "fail_open starts on local gates")
	defer gw.Close()
	_, _ = pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil })
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "msg=\"pgw: go-redis\"") }, 5*time.Second, 10*time.Millisecond,
		"go-redis's dial failure reached the gateway's logger:\n%s", logs.String())
	assert.Contains(t, logs.String(), "level=WARN msg=\"pgw: redis unreachable at start")
	assert.Contains(t, logs.String(), "addr=127.0.0.1:1 mode=fail_open", "the line names which Redis, and the mode")
	assert.NotContains(t, logs.String(), "sk-REDIS-PW")
}

// TestGoRedisLogsFollowAGatewayStillOpen: go-redis's logger is process-wide;
// once the gateway built last is closed, its lines go to the logger of a
// gateway still open, not to the closed one's.
func TestGoRedisLogsFollowAGatewayStillOpen(t *testing.T) {
	env := map[string]string{
		"PGW_BREAKER_BACKEND": "redis", "PGW_REDIS_URL": "redis://127.0.0.1:1/0?dial_timeout=50ms",
		"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "a",
	}
	var openLogs, closedLogs syncBuffer
	logger := func(w *syncBuffer) *slog.Logger {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	open, err := pgw.New(ctx, *mustSettings(t, env), pgw.WithLogger(logger(&openLogs)))
	require.NoError(t, err)
	defer open.Close()
	last, err := pgw.New(ctx, *mustSettings(t, env), pgw.WithLogger(logger(&closedLogs)))
	require.NoError(t, err)
	require.NoError(t, last.Close())
	const line = `msg="pgw: go-redis"`
	closedBefore, openBefore := strings.Count(closedLogs.String(), line), strings.Count(openLogs.String(), line)

	_, _ = pgw.Call(context.Background(), open, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil })
	require.Eventually(t, func() bool { return strings.Count(openLogs.String(), line) > openBefore }, 5*time.Second, 10*time.Millisecond,
		"go-redis's lines reach the open gateway's logger:\n%s", openLogs.String())
	assert.Equal(t, closedBefore, strings.Count(closedLogs.String(), line), "nothing more reaches the closed gateway's logger")
}
