package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// slowRedisBreaker is a breaker named "payments" on a Redis gate reached
// through a proxy whose latency the test sets, with the client settings
// pgw recommends (no re-sent commands, the caller's deadline on the
// socket).
func slowRedisBreaker(t *testing.T, p gate.Policy) (*breaker.Breaker, *testutil.Proxy) {
	t.Helper()
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	c := goredis.NewClient(&goredis.Options{Addr: px.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	g, err := redis.NewBreaker(c, "svc", p)
	require.NoError(t, err)
	cb, err := breaker.New("payments", breaker.Config{Gate: g, Logger: quiet()})
	require.NoError(t, err)
	return cb, px
}

// A caller whose deadline passes while a Redis gate decides its admission
// is a cancelled call, however the client reports it: the socket's timer,
// set from the same deadline, may fire a moment before ctx says it is
// done. The error wraps context.DeadlineExceeded, is no *OpenError, the
// function does not run, and Metrics counts it Cancelled, never as a gate
// error (which would read as Redis failing).
func TestAuditRedisDeadlineDuringAdmissionIsCancelledNotAGateError(t *testing.T) {
	cb, px := slowRedisBreaker(t, gate.Policy{ConsecutiveFailures: 5})
	require.NoError(t, ok(t.Context(), cb)) // the script is loaded, the connection open
	px.SetLatency(100 * time.Millisecond)
	const calls = 20
	for i := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		ran := false
		err := cb.Execute(ctx, func(context.Context) error { ran = true; return nil })
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "call %d", i)
		var oe *breaker.OpenError
		assert.NotErrorAs(t, err, &oe, "call %d", i)
		assert.False(t, ran, "call %d: the function does not run", i)
	}
	m := cb.Metrics()
	assert.Equal(t, uint64(calls), m.Cancelled, "every call is cancelled")
	assert.Zero(t, m.GateErrors, "no call is a gate error")
}

// A probe that succeeds just before its caller's deadline, whose outcome
// the Redis gate is still writing when the deadline passes, closes the
// breaker: the outcome is not lost with the caller's ctx, so the lease is
// not left taken until ProbeTTL (an hour here) with every other caller
// rejected. Execute returns the function's own nil.
func TestAuditRedisProbeOutcomeOutlivesTheCallersDeadline(t *testing.T) {
	cb, px := slowRedisBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 100 * time.Millisecond, ProbeTTL: time.Hour})
	require.ErrorIs(t, fail(t.Context(), cb), errDown)
	require.Eventually(t, func() bool { return cb.State() == gate.HalfOpen }, 10*time.Second, 10*time.Millisecond,
		"the cooldown passes")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err := cb.Execute(ctx, func(ctx context.Context) error {
		// The probe answers with 20 ms left; the outcome's round trip
		// takes 200 ms.
		px.SetLatency(100 * time.Millisecond)
		dl, _ := ctx.Deadline()
		time.Sleep(time.Until(dl) - 20*time.Millisecond)
		return nil
	})
	require.NoError(t, err)
	require.Error(t, ctx.Err(), "the deadline passed while the outcome was written")
	px.SetLatency(0)

	assert.Equal(t, gate.Closed, cb.State(), "the probe's success closed the breaker")
	err = ok(t.Context(), cb)
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		t.Fatalf("the lease is still taken: %v", err)
	}
	require.NoError(t, err)
	m := cb.Metrics()
	assert.Zero(t, m.Cancelled)
	assert.Equal(t, uint64(2), m.Successes)
}

// A caller whose deadline passes while the Redis gate grants it the probe
// lease — the script ran, its reply came too late — does not keep the
// lease: it is freed behind the caller's back, so the next caller probes
// and closes the breaker at once instead of being rejected HalfOpen until
// ProbeTTL (an hour here).
func TestAuditRedisProbeGrantedToACallerWhoGaveUpIsFreed(t *testing.T) {
	cb, px := slowRedisBreaker(t, gate.Policy{ConsecutiveFailures: 1, Cooldown: 100 * time.Millisecond, ProbeTTL: time.Hour})
	require.ErrorIs(t, fail(t.Context(), cb), errDown)
	require.Eventually(t, func() bool { return cb.State() == gate.HalfOpen }, 10*time.Second, 10*time.Millisecond,
		"the cooldown passes")

	// 100 ms each way: the script runs at 100 ms, its reply arrives at
	// 200 ms, after the caller's deadline.
	px.SetLatency(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	ran := false
	err := cb.Execute(ctx, func(context.Context) error { ran = true; return nil })
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, ran)
	px.SetLatency(0)

	// The release runs off the caller's path: the next caller may come
	// before it, and is then rejected as a probe in flight, no longer.
	var last error
	assert.Eventually(t, func() bool { last = ok(t.Context(), cb); return last == nil }, 5*time.Second, 20*time.Millisecond,
		"the lease granted to the caller who gave up is still taken")
	require.NoError(t, last)
	assert.Equal(t, gate.Closed, cb.State())
}
