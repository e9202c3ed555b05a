package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The outcome writer takes a call's outcome off the caller's path, yet a
// process never asks the breaker about a source before its own outcome that
// moves that breaker has been written: on a Redis with latency (so that the
// writer's round trip and the next admission's race), a call right after a
// failure that opened the breaker is refused (CIRCUIT_OPEN=fail_fast) with
// no attempt, and a call right after a successful probe is admitted on the
// Closed breaker instead of being refused as the probe's HalfOpen twin.
func TestAuditRedisOwnOutcomesThatMoveTheBreakerPrecedeTheNextAdmission(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	gw, _ := loggedGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":        "redis",
		"PGW_REDIS_URL":              "redis://" + px.Addr() + "/0",
		"PGW_REDIS_PREFIX":           "pgw-audit-order",
		"PGW_REDIS_PROBE_TIMEOUT_S":  "5", // the prober waits out the latency: no outage
		"PGW_REDIS_PROBE_INTERVAL_S": "20",
		"PGW_SCOPES":                 "RERANK",
		"RERANK__SOURCES":            "primary",
		"RERANK__FAILURE_THRESHOLD":  "1",
		"RERANK__COOLDOWN_S":         "1",
		"RERANK__MAX_COOLDOWN_S":     "1",
		"RERANK__CIRCUIT_OPEN":       "fail_fast",
	}, slog.LevelInfo)
	px.SetLatency(15 * time.Millisecond)

	var attempts atomic.Int64
	boom := errors.New("upstream broke")
	call := func(fail bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
			attempts.Add(1)
			if fail {
				return "", pgw.Usage{}, boom
			}
			return "ranked", pgw.Usage{}, nil
		})
		return err
	}
	for round := range 3 {
		before := attempts.Load()
		require.Error(t, call(true), "round %d: the failing call", round)
		require.EqualValues(t, 1, attempts.Load()-before, "round %d: the failure opened the breaker: no second attempt", round)

		err := call(false)
		var open *pgw.CircuitOpenError
		require.True(t, errors.As(err, &open), "round %d: the call right after the failure that opened the breaker: %v, want *pgw.CircuitOpenError", round, err)
		assert.EqualValues(t, 1, attempts.Load()-before, "round %d: the open breaker admitted an attempt", round)

		time.Sleep(1300 * time.Millisecond) // the cooldown (1 s, long enough for a loaded machine's next call) passes
		require.NoError(t, call(false), "round %d: the probe", round)
		require.NoError(t, call(false), "round %d: the call right after the successful probe finds the breaker Closed", round)
		require.EqualValues(t, 3, attempts.Load()-before, "round %d: attempts", round)
	}
}
