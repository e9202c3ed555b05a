package pgw_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The documented breaker keys of a scope — FAILURE_THRESHOLD, COOLDOWN_S,
// MAX_COOLDOWN_S and PROBE_TTL_S — reach the breaker the gateway builds, on
// the memory and on the Redis backend alike: the breaker opens at the
// threshold, for the cooldown, grows it after a failed probe up to the cap,
// rejects a call while its probe runs with RetryAfter 0 (never the lease
// length), and a probe that hangs past PROBE_TTL_S loses its lease to the
// next call, whose success closes the breaker; the hung probe's late
// failure then counts for nothing. Real time: cooldowns of 1–1.5 s, the
// lease 2 s, every bound generous.
func TestBreakerEnvKeysReachTheGatewaysBreaker(t *testing.T) {
	env := map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "solo",
		"GEN__MAX_ATTEMPTS":      "1",
		"GEN__FAILURE_THRESHOLD": "2",
		"GEN__COOLDOWN_S":        "1",
		"GEN__MAX_COOLDOWN_S":    "1.5",
		"GEN__PROBE_TTL_S":       "2", // the default would be 60 s (2 × TIMEOUT_S)
		"GEN__SOLO__TIMEOUT_S":   "30",
		"GEN__CIRCUIT_OPEN":      "fail_fast",
	}
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		auditEnvBreakerRun(t, env)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		srv := testutil.StartRedis(t)
		e := map[string]string{
			"PGW_BREAKER_BACKEND": "redis",
			"PGW_REDIS_URL":       "redis://" + srv.Addr + "/0",
			"PGW_REDIS_PREFIX":    "pgw-audit-" + strings.ReplaceAll(t.Name(), "/", "-"),
		}
		for k, v := range env {
			e[k] = v
		}
		auditEnvBreakerRun(t, e)
	})
}

func auditEnvBreakerRun(t *testing.T, env map[string]string) {
	gw, _ := newGateway(t, env)
	ctx := context.Background()
	var ran atomic.Int32
	boom := errors.New("boom")
	call := func(fn func(ctx context.Context) error) error {
		_, err := pgw.Call(ctx, gw, "GEN", func(ctx context.Context, _ pgw.Source) (struct{}, pgw.Usage, error) {
			ran.Add(1)
			return struct{}{}, pgw.Usage{}, fn(ctx)
		})
		return err
	}
	fail := func(context.Context) error { return boom }
	ok := func(context.Context) error { return nil }
	// settled waits until the gateway's outcome writer (Redis) has given
	// every outcome back, then reads the source's breaker.
	settled := func() pgw.Snapshot {
		t.Helper()
		require.Eventually(t, func() bool { return gw.OutcomeWriterStats().Unwritten == 0 }, 10*time.Second, 2*time.Millisecond)
		s, err := gw.Snapshot(ctx, "GEN", "solo")
		require.NoError(t, err)
		return s
	}
	// cooled waits until the Open phase is over, in the gate and in the
	// process's cooldown memo (which the rejection or the failed probe fed
	// a moment after the gate computed its openUntil).
	adm, err := gw.Admission("GEN")
	require.NoError(t, err)
	cooled := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			s, err := gw.Snapshot(ctx, "GEN", "solo")
			return err == nil && s.RetryAfter == 0 && adm.Memo().Remaining("solo", time.Now()) == 0
		}, 10*time.Second, 10*time.Millisecond)
	}
	var coe *pgw.CircuitOpenError

	require.Error(t, call(fail))
	s := settled()
	assert.Equal(t, pgw.StateClosed, s.State, "FAILURE_THRESHOLD=2: one failure does not open")
	assert.Equal(t, 1, s.ConsecutiveFailures)

	require.Error(t, call(fail))
	s = settled()
	require.Equal(t, pgw.StateOpen, s.State, "the second failure in a row opens")
	assert.Equal(t, time.Second, s.Cooldown, "COOLDOWN_S")

	before := ran.Load()
	err = call(ok)
	require.ErrorAs(t, err, &coe, "an open breaker rejects under fail_fast")
	assert.Positive(t, coe.RetryAfter)
	assert.LessOrEqual(t, coe.RetryAfter, time.Second, "RetryAfter is what is left of COOLDOWN_S")
	assert.Equal(t, before, ran.Load(), "a rejected call runs nothing")

	cooled()
	require.Error(t, call(fail), "the probe fails")
	s = settled()
	require.Equal(t, pgw.StateOpen, s.State, "a failed probe re-opens")
	assert.Equal(t, 1500*time.Millisecond, s.Cooldown, "the doubled cooldown stops at MAX_COOLDOWN_S")

	cooled()
	entered, release := make(chan struct{}), make(chan struct{})
	hung := make(chan error, 1)
	go func() {
		hung <- call(func(context.Context) error {
			close(entered)
			<-release
			return boom
		})
	}()
	select {
	case <-entered:
	case err := <-hung:
		t.Fatalf("the probe did not run: %v", err)
	}
	leased := time.Now() // the lease was granted before the probe ran
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	before = ran.Load()
	err = call(ok)
	require.ErrorAs(t, err, &coe, "a call while the probe runs is rejected")
	assert.Zero(t, coe.RetryAfter, "a HalfOpen rejection has no certain wait: never the lease length")
	assert.Equal(t, before, ran.Load())
	s = settled()
	assert.Equal(t, pgw.StateHalfOpen, s.State)
	assert.Equal(t, 1, s.ProbesInFlight)

	time.Sleep(time.Until(leased.Add(2*time.Second + 200*time.Millisecond)))
	require.NoError(t, call(ok), "PROBE_TTL_S=2: the hung probe's lease has expired, so this call probes")
	s = settled()
	require.Equal(t, pgw.StateClosed, s.State, "its success closes the breaker")
	assert.Equal(t, time.Second, s.Cooldown, "closing resets the cooldown to COOLDOWN_S")

	close(release)
	require.ErrorIs(t, <-hung, boom)
	require.Error(t, call(fail))
	s = settled()
	assert.Equal(t, pgw.StateClosed, s.State, "the expired probe's late failure counted for nothing")
	assert.Equal(t, 1, s.ConsecutiveFailures, "only the fresh failure counts")
}

// PGW_BREAKER_BACKEND=noop is "no breaker; quotas still apply": a 401 opens
// nothing, and the source's RPM still holds calls back, in the memory
// quota the noop backend falls back to.
func TestNoopBreakerBackendKeepsTheQuota(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":    "noop",
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "solo",
		"GEN__MAX_ATTEMPTS":      "1",
		"GEN__QUOTA_FULL":        "fail_fast",
		"GEN__SOLO__RPM":         "2",
		"GEN__FAILURE_THRESHOLD": "1",
	})
	ctx := context.Background()
	var ran int
	call := func(status int) error {
		_, err := pgw.Call(ctx, gw, "GEN", func(context.Context, pgw.Source) (struct{}, pgw.Usage, error) {
			ran++
			if status != 0 {
				return struct{}{}, pgw.Usage{}, &pgw.HTTPError{StatusCode: status, Message: "bad key"}
			}
			return struct{}{}, pgw.Usage{}, nil
		})
		return err
	}
	var he *pgw.HTTPError
	require.ErrorAs(t, call(401), &he, "the 401 is returned")
	s, err := gw.Snapshot(ctx, "GEN", "solo")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateClosed, s.State, "no breaker: a fatal answer opens nothing")
	require.NoError(t, call(0), "and the next call runs")
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, call(0), &ase, "RPM=2 still holds the third call back")
	assert.Equal(t, "quota_exhausted", ase.Reason)
	assert.Positive(t, ase.RetryAfter)
	assert.Equal(t, 2, ran)
	assert.Empty(t, rec.Transitions())
}
