package testutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartRedisStopRestart(t *testing.T) {
	s := StartRedis(t)
	reply, err := s.Do("SET", "k", "v")
	require.NoError(t, err)
	assert.Equal(t, "OK", reply)

	s.Stop()
	_, err = s.Do("PING")
	require.Error(t, err, "a stopped server answers nothing")
	s.Stop() // stopping twice is harmless

	s.Restart(t)
	reply, err = s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", reply)
	_, err = s.Do("GET", "k")
	assert.ErrorIs(t, err, ErrNilReply, "no persistence: the key is gone after a restart")
}

func TestRedisClusterWithReplicasFailsOverAndBack(t *testing.T) {
	c := StartRedisCluster(t, WithReplicas())
	require.Len(t, c.Replicas, 3)
	master := c.Nodes[0]
	replica := c.ReplicaOf(master.Addr)
	require.NotNil(t, replica, "every master has a replica")
	assert.Equal(t, c.Replicas[0].Addr, replica.Addr)

	require.NoError(t, c.Failover(t.Context(), replica))
	assert.Equal(t, master.Addr, c.ReplicaOf(replica.Addr).Addr, "the demoted master replicates the new one")
	require.NoError(t, c.Failover(t.Context(), master))
	assert.Equal(t, replica.Addr, c.ReplicaOf(master.Addr).Addr, "and back")
}
