package redis

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// A caller that gave up on its round trip has its lease released in the
// background, but never by more than maxForgetting goroutines at once: past
// that, the lease is left to expire and nothing is started.
func TestForgetLeaseStartsNoMoreThanItsBoundOfReleases(t *testing.T) {
	mr := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	q, err := NewQuota(c, "forget", map[string]gate.Limits{"s": {MaxInFlight: 1}})
	require.NoError(t, err)
	ctx := t.Context()
	p, qd, err := q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	require.True(t, qd.Allowed)
	gone, cancel := context.WithCancel(ctx)
	cancel()

	q.forgetting.Store(maxForgetting)
	q.forgetLease(gone, "s", p.ID)
	assert.Equal(t, int32(maxForgetting), q.forgetting.Load(), "a release refused for want of room leaves the count as it was")
	_, qd, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.False(t, qd.Allowed, "the lease was not released")

	q.forgetting.Store(0)
	q.forgetLease(gone, "s", p.ID)
	require.Eventually(t, func() bool {
		_, qd, err := q.Acquire(ctx, "s", 0)
		return err == nil && qd.Allowed
	}, 5*time.Second, 5*time.Millisecond, "the lease was released in the background")
	require.Eventually(t, func() bool { return q.forgetting.Load() == 0 }, 5*time.Second, time.Millisecond,
		"the release's goroutine counted itself out")
}
