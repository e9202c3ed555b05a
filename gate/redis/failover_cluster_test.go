package redis_test

import (
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// clusterFailoverUnderLoad fails the master of the load's slot over to its
// replica with CLUSTER FAILOVER, then back, under the cluster load
// (clusterload_test.go): not one gate operation may fail, and no limit or
// probe lease may be broken across the clients. A manual failover loses no
// write — the master holds its clients until the replica has caught up — so
// every lease and bucket level survives the switch; what the callers meet
// is a paused master, then MOVED or READONLY from the demoted one.
func clusterFailoverUnderLoad(t *testing.T, cl *testutil.RedisCluster) {
	require.NotEmpty(t, cl.Replicas, "the cluster has replicas (testutil.WithReplicas)")
	l := startClusterLoad(t, cl)
	nodes := map[string]*goredis.Client{}
	for _, n := range cl.All() {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr})
		t.Cleanup(func() { _ = c.Close() })
		nodes[n.Addr] = c
	}
	l.waitPacedFull()
	var took []time.Duration
	for range 2 { // over and back
		master := slotOwner(t, nodes, l.key())
		replica := cl.ReplicaOf(master)
		require.NotNil(t, replica, "master %s has a replica", master)
		start := time.Now()
		require.NoError(t, cl.Failover(t.Context(), replica))
		took = append(took, time.Since(start).Round(time.Millisecond))
		require.Equal(t, replica.Addr, slotOwner(t, nodes, l.key()), "the replica serves the slot")
		time.Sleep(200 * time.Millisecond) // load running on the new master
	}
	l.stopAndCheck(fmt.Sprintf("slot %d failed over and back (%v, %v to settle)", l.slot(), took[0], took[1]))
}
