package redis_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// slotMigrationUnderLoad moves the slot of the load's sources between two
// masters, back and forth, under the cluster load (clusterload_test.go):
// not one gate operation may fail, and no limit or probe lease may be
// broken across the clients.
func slotMigrationUnderLoad(t *testing.T, cl *testutil.RedisCluster) {
	const moves = 4
	l := startClusterLoad(t, cl)
	admin, ids := masterClients(t, cl)
	slot := l.slot()
	l.waitPacedFull()
	from := slotOwner(t, admin, l.key())
	to := cl.Addrs[0]
	if to == from {
		to = cl.Addrs[1]
	}
	for range moves {
		migrateSlot(t, admin, ids, slot, from, to)
		from, to = to, from
		time.Sleep(50 * time.Millisecond) // load running on the new owner
	}
	l.stopAndCheck(fmt.Sprintf("slot %d moved %d times", slot, moves))
}

// masterClients returns a client of each master at the start and the
// masters' node IDs, by address.
func masterClients(t *testing.T, cl *testutil.RedisCluster) (map[string]*goredis.Client, map[string]string) {
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
	return admin, ids
}

// slotOwner returns the address of the master that serves key: the others
// (and the replicas) answer MOVED.
func slotOwner(t *testing.T, nodes map[string]*goredis.Client, key string) string {
	for addr, c := range nodes {
		if c.Type(t.Context(), key).Err() == nil {
			return addr
		}
	}
	t.Fatalf("no node serves %s", key)
	return ""
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
