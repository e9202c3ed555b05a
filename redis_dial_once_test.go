package pgw_test

import (
	"context"
	"log/slog"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The Redis client pgw builds from PGW_REDIS_URL dials once per connection
// attempt: a call that meets a Redis that refuses connections finds it
// unreachable at its first dial and is served by the local fallback
// (fail_open), instead of first sitting through the client's default five
// dials with their backoff. Outages and recovery are the prober's to
// decide, at its own interval and backoff.
func TestRedisClientPgwBuildsDialsOnceWhenRedisRefuses(t *testing.T) {
	srv := testutil.StartRedis(t)
	gw, logs := loggedGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":        "redis",
		"PGW_REDIS_URL":              "redis://" + srv.Addr + "/0",
		"PGW_REDIS_PREFIX":           "pgw-test-" + t.Name(),
		"PGW_REDIS_PROBE_INTERVAL_S": "600", // the call, not the prober, meets the refusal
		"PGW_SCOPES":                 "RERANK",
		"RERANK__SOURCES":            "primary",
	}, slog.LevelDebug)

	srv.Stop()
	got, err := pgw.Call(context.Background(), gw, "RERANK", rerank)
	require.NoError(t, err, "fail_open serves the call locally")
	assert.Equal(t, "ranked", got)
	dials := regexp.MustCompile(`failed to dial after (\d+) attempts`).FindAllStringSubmatch(logs.String(), -1)
	require.NotEmpty(t, dials, "go-redis's dial failure reaches the gateway's logger at Debug:\n%s", logs.String())
	for _, d := range dials {
		assert.Equal(t, "1", d[1], "one dial per connection attempt: %s", d[0])
	}
}
