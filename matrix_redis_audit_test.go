package pgw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
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
