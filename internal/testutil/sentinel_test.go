//go:build unix

package testutil

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One set-up serves both checks: the failover, then — once the subtest's
// cleanups ran — that no process outlived it.
func TestStartRedisSentinelFailoverSwitchesTheMaster(t *testing.T) {
	var pids []int
	t.Run("Failover", func(t *testing.T) {
		s := StartRedisSentinel(t)
		for _, p := range append([]*RedisServer{s.Sentinel}, s.Nodes...) {
			pids = append(pids, p.cmd.Process.Pid)
		}
		old, replica := s.Nodes[0], s.Nodes[1]
		require.Equal(t, old.Addr, s.MasterAddr(t), "the sentinel reports the first node as master")
		info, err := replica.Do("INFO", "replication")
		require.NoError(t, err)
		assert.Contains(t, info, "role:slave")
		assert.Contains(t, info, "master_link_status:up")

		// WAIT counts the acknowledgements of its own connection's writes.
		replies, err := respPipeline(old.Addr, []string{"SET", "k", "v"}, []string{"WAIT", "1", "1000"})
		require.NoError(t, err)
		require.Equal(t, "1", replies[1], "the replica acknowledged the write")

		promoted := s.Failover(t)
		assert.Same(t, replica, promoted, "Failover returns the former replica")
		assert.Equal(t, replica.Addr, s.MasterAddr(t), "the sentinel reports the former replica as master")
		info, err = replica.Do("INFO", "replication")
		require.NoError(t, err)
		assert.Contains(t, info, "role:master")
		v, err := replica.Do("GET", "k")
		require.NoError(t, err)
		assert.Equal(t, "v", v, "the replicated write is on the new master")
		_, err = replica.Do("SET", "k", "w")
		assert.NoError(t, err, "the new master takes writes")
	})
	if len(pids) == 0 {
		return // skipped (no redis-server) or failed before starting
	}
	require.Len(t, pids, 3, "the set-up started three processes")
	for _, pid := range pids {
		// The processes were reaped by their Wait, so a live pid would be a
		// leaked process (or a reused pid, which is rare enough to ignore).
		err := syscall.Kill(pid, 0)
		assert.True(t, errors.Is(err, syscall.ESRCH), "pid %d still exists after cleanup (kill 0: %v)", pid, err)
	}
}
