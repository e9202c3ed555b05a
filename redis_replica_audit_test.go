package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// auditReplicaDeadPort returns a local port nothing listens on.
func auditReplicaDeadPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// A gateway pointed at a node that is a replica — a demoted master after a
// failover, whose every script is refused with READONLY, or a replica cut
// off from its master that serves nothing (MASTERDOWN) — meets a Redis that
// cannot serve, not a bug: fail_open serves the calls from its local gates
// (the prober's heartbeat, a write, is refused the same way), fail_closed
// fails with an error matching ErrUnreachable that names the reply. Neither
// ever reports a "script error".
func TestAuditRedisReplicaIsUnreachableNeverAScriptError(t *testing.T) {
	for _, tc := range []struct {
		name, reply, serveStale string
	}{
		{name: "READONLY", reply: "READONLY", serveStale: "yes"},
		{name: "MASTERDOWN", reply: "MASTERDOWN", serveStale: "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testutil.StartRedis(t)
			_, err := srv.Do("CONFIG", "SET", "replica-serve-stale-data", tc.serveStale)
			require.NoError(t, err)
			_, err = srv.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(auditReplicaDeadPort(t)))
			require.NoError(t, err)
			env := func(mode string) pgw.Settings {
				s, err := config.FromMap(map[string]string{
					"PGW_BREAKER_BACKEND":  "redis",
					"PGW_REDIS_URL":        "redis://" + srv.Addr + "/0",
					"PGW_REDIS_PREFIX":     "pgw-audit-replica",
					"PGW_REDIS_DOWN":       mode,
					"PGW_SCOPES":           "RERANK",
					"RERANK__SOURCES":      "primary",
					"RERANK__PRIMARY__RPM": "600",
				})
				require.NoError(t, err)
				return *s
			}
			call := func(gw *pgw.GatewayClient) (string, error) {
				return pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
					return "ranked", pgw.Usage{}, nil
				})
			}

			t.Run("fail_closed", func(t *testing.T) {
				var logs syncBuffer
				gw, err := pgw.New(context.Background(), env("fail_closed"),
					pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
				if err == nil {
					// Started (the scripts loaded): each call is refused
					// as Redis being unable to serve.
					t.Cleanup(func() { _ = gw.Close() })
					_, err = call(gw)
					require.Error(t, err, "fail_closed on a node that cannot serve")
				}
				assert.True(t, errors.Is(err, redis.ErrUnreachable), "want ErrUnreachable, got %v", err)
				assert.Contains(t, err.Error(), tc.reply, "the error names the reply")
				assert.NotContains(t, err.Error(), "script error")
				assert.NotContains(t, logs.String(), "script error")
			})

			t.Run("fail_open", func(t *testing.T) {
				var logs syncBuffer
				gw, err := pgw.New(context.Background(), env("fail_open"),
					pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
				require.NoError(t, err)
				t.Cleanup(func() { _ = gw.Close() })
				for range 3 {
					got, err := call(gw)
					require.NoError(t, err, "served by the local gates")
					assert.Equal(t, "ranked", got)
				}
				assert.Contains(t, logs.String(), tc.reply, "the outage's warning names the reply")
				assert.NotContains(t, logs.String(), "script error")
			})
		})
	}
}
