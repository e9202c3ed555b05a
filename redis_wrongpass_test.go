package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A Redis that refuses pgw's credentials (a wrong password in
// PGW_REDIS_URL) cannot serve the gates: that is Redis being unavailable
// to this gateway, not a script error. fail_closed refuses to start with
// an error matching ErrUnreachable that names the refusal; fail_open
// starts, says so once, and serves the calls from its local gates, as its
// warning at start promises.
func TestRedisRefusingTheCredentialsIsUnreachableNotAScriptError(t *testing.T) {
	srv := testutil.StartRedis(t)
	_, err := srv.Do("CONFIG", "SET", "requirepass", "the-right-one")
	require.NoError(t, err)
	env := func(mode string) pgw.Settings {
		s, err := config.FromMap(map[string]string{
			"PGW_BREAKER_BACKEND":  "redis",
			"PGW_REDIS_URL":        "redis://:a-wrong-one@" + srv.Addr + "/0",
			"PGW_REDIS_PREFIX":     "pgw-test-" + t.Name(),
			"PGW_REDIS_DOWN":       mode,
			"PGW_SCOPES":           "RERANK",
			"RERANK__SOURCES":      "primary",
			"RERANK__PRIMARY__RPM": "600",
		})
		require.NoError(t, err)
		return *s
	}

	t.Run("fail_closed", func(t *testing.T) {
		gw, err := pgw.New(context.Background(), env("fail_closed"))
		require.Error(t, err)
		assert.Nil(t, gw)
		assert.True(t, errors.Is(err, redis.ErrUnreachable), "%v", err)
		assert.Contains(t, err.Error(), "WRONGPASS", "the error names what Redis refused")
		assert.NotContains(t, err.Error(), "script error")
		assert.NotContains(t, err.Error(), "a-wrong-one")
	})

	t.Run("fail_open", func(t *testing.T) {
		var logs syncBuffer
		gw, err := pgw.New(context.Background(), env("fail_open"),
			pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
		require.NoError(t, err)
		t.Cleanup(func() { _ = gw.Close() })
		for range 3 {
			got, err := pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
				return "ranked", pgw.Usage{}, nil
			})
			require.NoError(t, err, "served by the local gates")
			assert.Equal(t, "ranked", got)
		}
		assert.Contains(t, logs.String(), "WRONGPASS")
		assert.NotContains(t, logs.String(), "script error")
		assert.NotContains(t, logs.String(), "a-wrong-one")
	})
}
