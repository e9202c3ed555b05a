package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Under PGW_REDIS_DOWN=fail_closed an outage is logged once, like under
// fail_open: the calls that then fail at once with ErrUnreachable do not
// each add a Warn line of their own.
func TestRedisFailClosedOutageIsLoggedOnceNotOncePerCall(t *testing.T) {
	srv := testutil.StartRedis(t)
	// A probe's timeout is real time, at most half the interval. At an
	// interval of 0.05 s (a 25 ms timeout) two probes slowed by a loaded
	// machine started an outage before Redis stopped, and the set-up call
	// failed with ErrUnreachable. At 1 s the timeout is 0.5 s, and a
	// stopped Redis (its port refuses at once) is still seen within about
	// one interval.
	gw, logs := loggedGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":        "redis",
		"PGW_REDIS_URL":              "redis://" + srv.Addr + "/0",
		"PGW_REDIS_PREFIX":           "pgw-test-" + t.Name(),
		"PGW_REDIS_DOWN":             "fail_closed",
		"PGW_REDIS_PROBE_INTERVAL_S": "1",
		"PGW_REDIS_PROBE_TIMEOUT_S":  "0.5",
		"PGW_SCOPES":                 "RERANK",
		"RERANK__SOURCES":            "primary",
	}, slog.LevelInfo)

	srv.Stop()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "redis outage") }, 10*time.Second, 5*time.Millisecond,
		"the prober sees the outage")
	before := strings.Count(logs.String(), "level=WARN")
	const calls = 20
	for range calls {
		_, err := pgw.Call(context.Background(), gw, "RERANK", rerank)
		require.Error(t, err)
		assert.True(t, errors.Is(err, redis.ErrUnreachable), "%v", err)
		assert.Contains(t, err.Error(), "redis is unreachable")
	}
	assert.Equal(t, before, strings.Count(logs.String(), "level=WARN"),
		"no Warn line per call during an outage already logged:\n%s", logs.String())
}

// rerank is a RERANK attempt that always answers.
func rerank(context.Context, pgw.Source) (string, pgw.Usage, error) {
	return "ranked", pgw.Usage{}, nil
}

// loggedGateway builds a gateway from env that logs at level into the
// returned buffer, and runs one RERANK call through it, so that Redis
// holds the scope's keys and has heard the call's outcome.
func loggedGateway(t *testing.T, env map[string]string, level slog.Level) (*pgw.GatewayClient, *syncBuffer) {
	t.Helper()
	s, err := config.FromMap(env)
	require.NoError(t, err)
	logs := &syncBuffer{}
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	_, err = pgw.Call(context.Background(), gw, "RERANK", rerank)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gw.OutcomeWriterStats().Unwritten == 0 }, 10*time.Second, time.Millisecond)
	return gw, logs
}
