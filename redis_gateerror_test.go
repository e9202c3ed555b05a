package pgw_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// One source whose Redis record cannot be served (here a key of the wrong
// type: a script error, no outage) never ends a call while another source
// is only held back by something the scope waits for: its in-flight quota
// under QUOTA_FULL=wait, its open breaker under CIRCUIT_OPEN=wait. The call
// waits for that source and succeeds.
func TestRedisGateErrorOnOneSourceDoesNotEndAWaitForAnother(t *testing.T) {
	base := func(t *testing.T, srv *testutil.RedisServer, up *testutil.Upstream) map[string]string {
		env := map[string]string{
			"PGW_BREAKER_BACKEND":   "redis",
			"PGW_REDIS_URL":         "redis://" + srv.Addr + "/0",
			"PGW_REDIS_PREFIX":      "pgw-test-" + strings.ReplaceAll(t.Name(), "/", "-"),
			"PGW_SCOPES":            "CHAT",
			"CHAT__SOURCES":         "a,b",
			"CHAT__A__BASE_URL":     up.URL,
			"CHAT__A__PRIORITY":     "0",
			"CHAT__B__BASE_URL":     up.URL,
			"CHAT__B__PRIORITY":     "1",
			"CHAT__POLL_INTERVAL_S": "0.02",
		}
		// a's breaker record is a string: every script on a's keys fails.
		_, err := srv.Do("SET", env["PGW_REDIS_PREFIX"]+":{chat:a}:cb", "not a hash")
		require.NoError(t, err)
		return env
	}

	t.Run("quota_full=wait", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		up := testutil.NewUpstream(t)
		env := base(t, srv, up)
		env["CHAT__B__MAX_IN_FLIGHT"] = "1"
		gw, _ := newGateway(t, env)
		up.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: 400 * time.Millisecond})

		first := make(chan error, 1)
		go func() {
			_, err := gw.Chat(context.Background(), hello())
			first <- err
		}()
		require.Eventually(t, func() bool { return up.Requests(testutil.Chat) == 1 }, 5*time.Second, 5*time.Millisecond,
			"the first call holds b's only in-flight slot")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, err, "the second call waits for b's slot instead of failing on a's gate error")
		require.NoError(t, <-first)
		assert.Equal(t, 2, up.Requests(testutil.Chat))
	})

	t.Run("circuit_open=wait", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		up := testutil.NewUpstream(t)
		env := base(t, srv, up)
		env["CHAT__CIRCUIT_OPEN"] = "wait"
		env["CHAT__FAILURE_THRESHOLD"] = "1"
		env["CHAT__COOLDOWN_S"] = "0.3"
		gw, _ := newGateway(t, env)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, err, "the call waits out b's cooldown and its probe succeeds, whatever a's gate says")
		assert.Equal(t, 2, up.Requests(testutil.Chat), "b failed once, then its probe succeeded")
	})
}
