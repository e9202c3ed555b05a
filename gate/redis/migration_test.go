package redis_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// slotMigrationUnderLoad moves the hot source's slot between two masters,
// back and forth, while 3 clients (as 3 processes would) × 16 goroutines
// run governed attempts on it: TryEnter, Acquire, Record, Finish. Not one
// gate operation may fail, and the source's in-flight limit must hold.
func slotMigrationUnderLoad(t *testing.T, cl *testutil.RedisCluster) {
	const (
		procs, goroutines = 3, 16
		maxInFlight       = 32
		moves             = 4
	)
	scope := uniqueScope()
	limits := map[string]gate.Limits{"hot": {RPM: 6_000_000, MaxInFlight: maxInFlight}}
	type proc struct {
		b *redis.Breaker
		q *redis.Quota
	}
	ps := make([]proc, procs)
	for i := range ps {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		b, err := redis.NewBreaker(c, scope, gate.Policy{})
		require.NoError(t, err)
		q, err := redis.NewQuota(c, scope, limits)
		require.NoError(t, err)
		ps[i] = proc{b, q}
	}

	var calls, failed, inFlight, peak atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range ps {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					attempt(ctx, p.b, p.q, &calls, &inFlight, &peak, fail)
					cancel()
				}
			}()
		}
	}

	admin := map[string]*goredis.Client{}
	ids := map[string]string{}
	for _, addr := range cl.Addrs {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		admin[addr] = c
		id, err := c.Do(t.Context(), "CLUSTER", "MYID").Text()
		require.NoError(t, err)
		ids[addr] = id
	}
	probe := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = probe.Close() })
	slot, err := probe.ClusterKeySlot(t.Context(), ps[0].b.Keys("hot")[0]).Result()
	require.NoError(t, err)
	owner := func() string {
		// Only the owner answers for a key of the slot; the others say MOVED.
		for addr, c := range admin {
			if c.Type(t.Context(), ps[0].b.Keys("hot")[0]).Err() == nil {
				return addr
			}
		}
		t.Fatalf("slot %d has no owner", slot)
		return ""
	}

	time.Sleep(100 * time.Millisecond) // load running
	from := owner()
	to := cl.Addrs[0]
	if to == from {
		to = cl.Addrs[1]
	}
	for range moves {
		migrateSlot(t, admin, ids, slot, from, to)
		from, to = to, from
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	t.Logf("%d attempts while slot %d moved %d times; failed %d; peak in flight %d (limit %d)",
		calls.Load(), slot, moves, failed.Load(), peak.Load(), maxInFlight)
	require.Zero(t, failed.Load(), "gate operations failed during the migration, first: %v", firstErr.Load())
	require.LessOrEqual(t, peak.Load(), int64(maxInFlight), "in-flight limit exceeded")
	require.Positive(t, calls.Load())
}

// attempt is one governed attempt on the hot source, its give-back included.
func attempt(ctx context.Context, b *redis.Breaker, q *redis.Quota, calls, inFlight, peak *atomic.Int64, fail func(error)) {
	d, err := b.TryEnter(ctx, "hot")
	if err != nil {
		fail(err)
		return
	}
	if !d.Allowed {
		return
	}
	p, qd, err := q.Acquire(ctx, "hot", 0)
	if err != nil || !qd.Allowed {
		if err != nil {
			fail(err)
		}
		if _, err := b.Record(ctx, "hot", d, gate.Released); err != nil {
			fail(err)
		}
		return
	}
	calls.Add(1)
	n := inFlight.Add(1)
	for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
	}
	time.Sleep(200 * time.Microsecond)
	inFlight.Add(-1)
	if _, err := b.Record(ctx, "hot", d, gate.Success); err != nil {
		fail(err)
	}
	if err := q.Finish(ctx, p, 0); err != nil {
		fail(err)
	}
}

// migrateSlot moves slot from one master to another the way redis-cli
// --cluster reshard does: IMPORTING and MIGRATING, MIGRATE of every key,
// then SETSLOT NODE on both and the third master.
func migrateSlot(t *testing.T, admin map[string]*goredis.Client, ids map[string]string, slot int64, from, to string) {
	t.Helper()
	ctx := t.Context()
	src, dst := admin[from], admin[to]
	require.NoError(t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]).Err())
	require.NoError(t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]).Err())
	time.Sleep(30 * time.Millisecond) // the window in which multi-key scripts meet TRYAGAIN and ASK
	host, port, err := net.SplitHostPort(to)
	require.NoError(t, err)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, src.Do(ctx, args...).Err(), fmt.Sprint("MIGRATE ", keys))
	}
	for _, addr := range []string{to, from} {
		require.NoError(t, admin[addr].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err())
	}
	for addr, c := range admin {
		if addr != to && addr != from {
			require.NoError(t, c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err())
		}
	}
}
