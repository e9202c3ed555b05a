package pgw_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Under PGW_REDIS_DOWN=fail_closed an outage is logged once, like under
// fail_open: the calls that then fail at once with ErrUnreachable do not
// each add a Warn line of their own.
func TestRedisFailClosedOutageIsLoggedOnceNotOncePerCall(t *testing.T) {
	srv := testutil.StartRedis(t)
	s, err := config.FromMap(map[string]string{
		"PGW_BREAKER_BACKEND":        "redis",
		"PGW_REDIS_URL":              "redis://" + srv.Addr + "/0",
		"PGW_REDIS_PREFIX":           "pgw-test-" + t.Name(),
		"PGW_REDIS_DOWN":             "fail_closed",
		"PGW_REDIS_PROBE_INTERVAL_S": "0.05",
		"PGW_SCOPES":                 "RERANK",
		"RERANK__SOURCES":            "primary",
	})
	require.NoError(t, err)
	var logs lockedBuffer
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	rank := func(context.Context, pgw.Source) (string, pgw.Usage, error) { return "ranked", pgw.Usage{}, nil }
	_, err = pgw.Call(context.Background(), gw, "RERANK", rank)
	require.NoError(t, err)

	srv.Stop()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "redis outage") }, 10*time.Second, 5*time.Millisecond,
		"the prober sees the outage")
	before := strings.Count(logs.String(), "level=WARN")
	const calls = 20
	for range calls {
		_, err := pgw.Call(context.Background(), gw, "RERANK", rank)
		require.Error(t, err)
		assert.True(t, errors.Is(err, redis.ErrUnreachable), "%v", err)
		assert.Contains(t, err.Error(), "redis is unreachable")
	}
	assert.Equal(t, before, strings.Count(logs.String(), "level=WARN"),
		"no Warn line per call during an outage already logged:\n%s", logs.String())
}
