package faultsuite_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	fs "github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Every leak check of the suite and the soak reads Redis through Inspect: a
// held in-flight slot and a held probe lease of the Redis gates must show
// there, under the scope and source they belong to, and be gone once given
// back. Were Inspect to read other keys than the gates write, every "0
// leases left" would hold whatever leaked.
func TestInspectSeesTheLeasesTheRedisGatesHold(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const prefix = "pgw-fault-inspect"
	sources := map[string][]string{fs.ScopeTool: {"t1", "t2"}, fs.ScopeChat: {"a"}}
	inspect := func() map[string]fs.Leases {
		t.Helper()
		ls, err := fs.Inspect(ctx, srv.Addr, prefix, sources)
		require.NoError(t, err)
		out := map[string]fs.Leases{}
		for _, l := range ls {
			out[l.Scope+"/"+l.Source] = l
		}
		return out
	}

	q, err := redis.NewQuota(c, fs.ScopeTool, map[string]gate.Limits{"t2": {MaxInFlight: 4}},
		redis.WithPrefix(prefix), redis.WithLease(time.Minute))
	require.NoError(t, err)
	permit, qd, err := q.Acquire(ctx, "t2", 0)
	require.NoError(t, err)
	require.True(t, qd.Allowed)

	const cooldown = 50 * time.Millisecond
	b, err := redis.NewBreaker(c, fs.ScopeChat, gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown},
		redis.WithPrefix(prefix))
	require.NoError(t, err)
	d, err := b.TryEnter(ctx, "a")
	require.NoError(t, err)
	_, err = b.Record(ctx, "a", d, gate.Failure)
	require.NoError(t, err)
	time.Sleep(cooldown + 20*time.Millisecond) // real time: the Open phase runs out on Redis's clock
	probe, err := b.TryEnter(ctx, "a")
	require.NoError(t, err)
	require.True(t, probe.Allowed && probe.Probe, "the breaker admits a probe after its cooldown: %+v", probe)

	held := inspect()
	assert.Equal(t, int64(1), held["TOOL/t2"].InFlight, "the in-flight slot: %s", held["TOOL/t2"])
	assert.Positive(t, held["TOOL/t2"].InFlightLife, "its life left")
	assert.Equal(t, int64(1), held["CHAT/a"].Probes, "the probe lease: %s", held["CHAT/a"])
	assert.Positive(t, held["CHAT/a"].ProbeLife, "its life left")
	assert.Zero(t, held["TOOL/t1"].InFlight+held["TOOL/t1"].Probes, "t1 holds nothing: %s", held["TOOL/t1"])

	require.NoError(t, q.Release(ctx, permit))
	_, err = b.Record(ctx, "a", probe, gate.Success)
	require.NoError(t, err)
	for k, l := range inspect() {
		assert.Zero(t, l.InFlight+l.Probes, "%s after the give-back: %s", k, l)
	}
}
