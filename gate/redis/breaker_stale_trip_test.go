package redis_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// Two standalone breakers of one name on one Redis gate are two processes.
// A call of one, admitted before the other tripped the shared record and
// probed it closed, fails late: through its FailureThreshold it must not
// open the fresh Closed record.
func TestStandaloneBreakerStaleFailureDoesNotTripTheSharedRecord(t *testing.T) {
	_, clk, c := newMini(t)
	g, err := redis.NewBreaker(c, uniqueScope(), gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Second, CooldownMultiplier: 1})
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := breaker.New("pay", breaker.Config{Gate: g, FailureThreshold: 2, Logger: logger})
	require.NoError(t, err)
	other, err := breaker.New("pay", breaker.Config{Gate: g, Logger: logger})
	require.NoError(t, err)
	boom := errors.New("503")
	fail := func(context.Context) error { return boom }
	ok := func(context.Context) error { return nil }

	require.ErrorIs(t, a.Execute(t.Context(), fail), boom)
	old, err := a.Allow(t.Context())
	require.NoError(t, err)
	require.NoError(t, other.Execute(t.Context(), ok))
	require.ErrorIs(t, other.Execute(t.Context(), fail), boom)
	require.ErrorIs(t, other.Execute(t.Context(), fail), boom)
	require.Equal(t, gate.Open, other.State())
	clk.Advance(time.Second)
	require.NoError(t, other.Execute(t.Context(), ok))
	closed, err := g.Snapshot(t.Context(), "pay")
	require.NoError(t, err)
	require.Equal(t, gate.Closed, closed.State)

	old.Done(boom)
	snap, err := g.Snapshot(t.Context(), "pay")
	require.NoError(t, err)
	assert.Equal(t, gate.Closed, snap.State)
	assert.Equal(t, closed.Generation, snap.Generation)
	assert.Equal(t, uint64(1), a.Metrics().Stale)
}
