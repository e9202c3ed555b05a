package pgw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Two gateways on one Redis are two processes of one service. One holds
// the shared breaker's probe; the other meets a HalfOpen breaker it never
// saw open. Under fail_fast it gets *CircuitOpenError with RetryAfter 0
// and, once the probe has closed the breaker, is served at once: its
// rejection left nothing in its own memo. Under wait it waits without a
// certain end and is served when the other process's probe succeeds.
func TestAuditAcrossProcessesAHalfOpenRejectionFollowsTheMatrix(t *testing.T) {
	srv := testutil.StartRedis(t)
	for _, mode := range []string{"fail_fast", "wait"} {
		t.Run(mode, func(t *testing.T) {
			extra := map[string]string{
				"PGW_BREAKER_BACKEND": "redis",
				"PGW_REDIS_URL":       "redis://" + srv.Addr + "/0",
				"PGW_REDIS_PREFIX":    "pgw-audit-" + strings.ReplaceAll(t.Name(), "/", "-"),
				"GEN__CIRCUIT_OPEN":   mode,
				"GEN__QUOTA_FULL":     "fail_fast",
			}
			_, ww1, h := probeHeld(t, extra)
			ww2 := newWaitWatch()
			gw2, _ := newGateway(t, probeEnv(extra), ww2.option())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			if mode == "fail_fast" {
				_, err := pgw.Call(ctx, gw2, "GEN", answerWith(0))
				var coe *pgw.CircuitOpenError
				require.ErrorAs(t, err, &coe)
				assert.Equal(t, []string{"a"}, coe.Sources)
				assert.Zero(t, coe.RetryAfter, "a probe in flight in the other process: no certain wait")
				h.finish(t)
				ww1.changeTo(t, pgw.StateClosed)
				_, err = pgw.Call(ctx, gw2, "GEN", answerWith(0))
				require.NoError(t, err, "the recovered source is used at once by the other process too")
				ww2.noWait(t)
				return
			}
			done := make(chan error, 1)
			go func() {
				_, err := pgw.Call(ctx, gw2, "GEN", answerWith(0))
				done <- err
			}()
			ws := ww2.nextStart(t)
			assert.Equal(t, "circuit_open", ws.Reason)
			assert.Equal(t, map[string]string{"a": "circuit_open"}, ws.Reasons)
			assert.Zero(t, ws.RetryAfter)
			h.finish(t)
			require.NoError(t, <-done)
		})
	}
}

// An operator's override (pgw open) holds every source open with no
// certain end: under fail_fast a call gets *CircuitOpenError with
// RetryAfter 0 and makes no attempt, and the reset takes effect at once
// (the rejection left no memo); under wait a call re-checks until the reset
// and is served, or ends stalled with circuit_open when the window passes.
func TestAuditAnOperatorsForcedOpenFollowsTheMatrix(t *testing.T) {
	srv := testutil.StartRedis(t)
	setup := func(t *testing.T, mode string, extra map[string]string) (*pgw.GatewayClient, *waitWatch, func(gate.Force)) {
		t.Helper()
		env := map[string]string{
			"PGW_BREAKER_BACKEND":  "redis",
			"PGW_REDIS_URL":        "redis://" + srv.Addr + "/0",
			"PGW_REDIS_PREFIX":     "pgw-audit-" + strings.ReplaceAll(t.Name(), "/", "-"),
			"PGW_SCOPES":           "GEN",
			"GEN__SOURCES":         "a",
			"GEN__CIRCUIT_OPEN":    mode,
			"GEN__POLL_INTERVAL_S": "0.005",
		}
		for k, v := range extra {
			env[k] = v
		}
		s, err := config.FromMap(env)
		require.NoError(t, err)
		sc, ok := s.Scope("GEN")
		require.True(t, ok)
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
		t.Cleanup(func() { _ = c.Close() })
		op, err := redis.NewBreaker(c, "GEN", sc.Policy(), redis.WithPrefix(env["PGW_REDIS_PREFIX"]))
		require.NoError(t, err)
		force := func(f gate.Force) { require.NoError(t, op.Force(context.Background(), "a", f)) }
		ww := newWaitWatch()
		gw, _ := newGateway(t, env, ww.option())
		return gw, ww, force
	}
	t.Run("fail_fast", func(t *testing.T) {
		gw, ww, force := setup(t, "fail_fast", nil)
		force(gate.ForceOpen)
		_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe)
		assert.Equal(t, []string{"a"}, coe.Sources)
		assert.Zero(t, coe.RetryAfter, "forced open: no certain end")
		assert.Empty(t, ww.Outcomes(), "no attempt")
		force(gate.ForceNone)
		_, err = pgw.Call(context.Background(), gw, "GEN", answerWith(0))
		require.NoError(t, err, "the reset takes effect at once")
	})
	t.Run("wait until the reset", func(t *testing.T) {
		gw, ww, force := setup(t, "wait", nil)
		force(gate.ForceOpen)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
			done <- err
		}()
		ws := ww.nextStart(t)
		assert.Equal(t, "circuit_open", ws.Reason)
		assert.Zero(t, ws.RetryAfter)
		force(gate.ForceNone)
		require.NoError(t, <-done)
	})
	t.Run("wait until the stall window", func(t *testing.T) {
		gw, _, force := setup(t, "wait", map[string]string{"GEN__STALL_WINDOW_S": "0.05"})
		force(gate.ForceOpen)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
		require.NoError(t, ctx.Err())
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonStalled, ase.Reason)
		assert.Equal(t, map[string]string{"a": "circuit_open"}, ase.Reasons)
		force(gate.ForceNone)
	})
}
