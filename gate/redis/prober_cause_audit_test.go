package redis_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// During a prober's outage a fail_closed gate refuses at once with an error
// that matches ErrUnreachable and quotes what started the outage — here the
// probes' timeouts on a black hole — without wrapping it: the probe's
// timeout is not the caller's deadline, so the error is never
// context.DeadlineExceeded (which admission, and callers, read as their own
// deadline), nor a net.Error timeout.
func TestAuditFailClosedOutageErrorQuotesItsCauseButIsNoDeadline(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	c := proxiedClient(t, px.Addr())
	pr := newTestProber(t, c, "pgw", &logSink{})
	rb, err := redis.NewBreaker(c, uniqueScope(), gate.Policy{})
	require.NoError(t, err)
	closed, err := redis.NewFailover(rb, nil, redis.FailClosed, slog.New(&logSink{}), redis.WithProber(pr))
	require.NoError(t, err)
	require.True(t, waitFor(5*time.Second, func() bool { p, _ := pr.Probes(); return p >= 1 && !pr.Down() }))

	px.SetMode(testutil.ProxyBlackhole)
	require.True(t, waitFor(5*time.Second, pr.Down), "the prober must see the blackhole")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = closed.TryEnter(ctx, "s")
	require.ErrorIs(t, err, redis.ErrUnreachable)
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the outage's error is not the caller's deadline: %v", err)
	assert.False(t, errors.Is(err, context.Canceled), "%v", err)
	var nerr net.Error
	assert.False(t, errors.As(err, &nerr), "the probe's i/o timeout is not this call's: %v", err)
	assert.True(t, strings.Contains(err.Error(), "outage in progress"), "%v", err)
	t.Log(err)
	assert.NoError(t, ctx.Err())
	px.SetMode(testutil.ProxyForward)
}
