package redis_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// How long the failover client may take to move its connections to the new
// master once the Sentinel reports it (it hears +switch-master on pub/sub).
const clientSwitchTimeout = 10 * time.Second

// TestRedisSentinel runs everything that needs Sentinel on one set-up (a
// master, a replica, a Sentinel) through a go-redis failover client built by
// NewUniversalClient from MasterName: the three contract suites exactly as
// on a single redis-server, then a failover, last, since it changes the
// master under the client.
func TestRedisSentinel(t *testing.T) {
	s := testutil.StartRedisSentinel(t)
	c := goredis.NewUniversalClient(&goredis.UniversalOptions{MasterName: s.MasterName, Addrs: s.SentinelAddrs})
	t.Cleanup(func() { _ = c.Close() })
	require.IsType(t, &goredis.Client{}, c, "MasterName makes NewUniversalClient build a failover client")

	t.Run("Contract", func(t *testing.T) {
		contracttest.RunBreaker(t, realBreakers(c))
	})

	t.Run("ForceContract", func(t *testing.T) {
		contracttest.RunBreakerForce(t, realBreakers(c))
	})

	t.Run("QuotaContract", func(t *testing.T) {
		contracttest.RunQuota(t, realQuotas(c))
	})

	t.Run("OpenBreakerStaysOpenAcrossFailover", func(t *testing.T) {
		openBreakerStaysOpenAcrossFailover(t, s, c)
	})
}

// A breaker tripped on the old master, replicated (WAIT), then SENTINEL
// FAILOVER: once the client talks to the new master — which holds no
// scripts — every operation answers without error, through EVAL on
// NOSCRIPT, and the record is the replicated one: still Open, same
// generation and openUntil, a positive RetryAfter.
func openBreakerStaysOpenAcrossFailover(t *testing.T, s *testutil.RedisSentinel, c goredis.UniversalClient) {
	p := shortPolicy()
	p.Cooldown = 10 * time.Second // stays Open for the whole test
	p.MaxCooldown = 10 * time.Second
	scope := uniqueScope()
	b, err := redis.NewBreaker(c, scope, p)
	require.NoError(t, err)
	ctx := t.Context()
	for range p.ConsecutiveFailures {
		d, err := b.TryEnter(ctx, "a")
		require.NoError(t, err)
		_, err = b.Record(ctx, "a", d, gate.Failure)
		require.NoError(t, err)
	}
	before, err := b.Snapshot(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, gate.Open, before.State, "tripped on the old master")

	// WAIT counts the acknowledgements of its own connection's writes, and
	// the pool may have run the trip on another connection: a barrier write
	// pipelined with WAIT on one connection covers every earlier write,
	// since a master replicates in order.
	var acked *goredis.Cmd
	_, err = c.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.Set(ctx, "{"+scope+"}:barrier", "1", time.Minute)
		acked = pl.Do(ctx, "WAIT", 1, 1000)
		return nil
	})
	require.NoError(t, err)
	n, err := acked.Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the replica acknowledged the trip before the failover")

	oldAddr := s.MasterAddr(t)
	newMaster := s.Failover(t)
	require.NotEqual(t, oldAddr, newMaster.Addr)
	awaitClientOn(t, c, newMaster.Addr)

	// A promoted Redis 7 replica holds no scripts (EVAL replicates its
	// effects, SCRIPT LOAD is not propagated); older servers may have
	// propagated SCRIPT LOAD. Flushing makes the new master script-less
	// whatever the version, so the NOSCRIPT → EVAL path is what runs.
	_, err = newMaster.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	noscript := &noscriptReplies{}
	c.AddHook(noscript)

	after, err := b.Snapshot(ctx, "a")
	require.NoError(t, err, "Snapshot on the new master")
	assert.Equal(t, gate.Open, after.State, "the replicated trip survives the failover")
	assert.Equal(t, before.Generation, after.Generation, "the same record, not a new one")
	assert.True(t, before.OpenUntil.Equal(after.OpenUntil), "openUntil %v before, %v after", before.OpenUntil, after.OpenUntil)
	assert.Positive(t, after.RetryAfter)
	assert.LessOrEqual(t, after.RetryAfter, p.Cooldown)

	d, err := b.TryEnter(ctx, "a")
	require.NoError(t, err, "TryEnter on the new master")
	assert.False(t, d.Allowed)
	assert.Equal(t, gate.Open, d.State)
	assert.Positive(t, d.RetryAfter)

	ra, err := b.RetryAfter(ctx, []string{"a", "a"})
	require.NoError(t, err, "RetryAfter on the new master")
	assert.Positive(t, ra, "a is still Open")

	// A failure (one of two allowed) writes a record for b.
	d, err = b.TryEnter(ctx, "b")
	require.NoError(t, err)
	require.True(t, d.Allowed, "b is Closed")
	u, err := b.Record(ctx, "b", d, gate.Failure)
	require.NoError(t, err, "Record on the new master")
	assert.True(t, u.Applied)
	assert.Equal(t, gate.Closed, u.State)
	exists, err := newMaster.Do("EXISTS", b.Keys("b")[0])
	require.NoError(t, err)
	assert.Equal(t, "1", exists, "the write landed on the new master")

	assert.Positive(t, noscript.n.Load(), "the new master answered NOSCRIPT and the gate fell back to EVAL")
}

// awaitClientOn waits until the failover client's commands reach the server
// at addr: it asks the answering server for its port. Errors while the
// client moves its connections are part of the switch and tolerated; the
// test asserts on what comes after.
func awaitClientOn(t *testing.T, c goredis.UniversalClient, addr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	deadline := time.Now().Add(clientSwitchTimeout)
	for {
		got, err := c.ConfigGet(t.Context(), "port").Result()
		if err == nil && got["port"] == port {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("failover client not on the new master %s within %v: port %q, err %v", addr, clientSwitchTimeout, got["port"], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noscriptReplies counts NOSCRIPT error replies, single or pipelined. A
// single command's error is the one its hook chain returns: go-redis sets it
// on the Cmd only after the hooks ran.
type noscriptReplies struct{ n atomic.Int64 }

func (h *noscriptReplies) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *noscriptReplies) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		h.count(err)
		return err
	}
}

func (h *noscriptReplies) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd.Err())
		}
		return err
	}
}

func (h *noscriptReplies) count(err error) {
	if goredis.HasErrorPrefix(err, "NOSCRIPT") {
		h.n.Add(1)
	}
}
