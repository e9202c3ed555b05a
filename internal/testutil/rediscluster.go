package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisCluster is a 3-master Redis Cluster owned by a test, optionally with
// one replica per master (WithReplicas).
type RedisCluster struct {
	// Addrs are the masters' host:port at the start, the seeds for a
	// cluster client. A failover (Failover) changes which node is a master
	// but not this list: any node is a good seed.
	Addrs []string
	// Nodes are the masters' server processes at the start, in the order of
	// Addrs.
	Nodes []*RedisServer
	// Replicas[i], with WithReplicas, started as the replica of Nodes[i];
	// empty otherwise.
	Replicas []*RedisServer
}

// ClusterOption configures StartRedisCluster.
type ClusterOption func(*clusterConfig)

type clusterConfig struct{ replicas bool }

// WithReplicas gives each of the three masters one replica: three more
// servers, attached with CLUSTER REPLICATE, so that a test can fail a master
// over (Failover). StartRedisCluster returns once every replica is in sync
// and every node knows every replica as such, which a failover election
// needs (a master votes only for a replica it knows).
func WithReplicas() ClusterOption { return func(c *clusterConfig) { c.replicas = true } }

// StartRedisCluster starts three cluster-enabled redis-servers on free
// loopback ports, joins them with redis-cli --cluster create (16384 slots
// over three masters) and waits until every node reports cluster_state:ok;
// WithReplicas adds one replica per master. It skips (or, with CI=true,
// fails) the test when redis-server or redis-cli is not installed.
func StartRedisCluster(t testing.TB, opts ...ClusterOption) *RedisCluster {
	t.Helper()
	var cfg clusterConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	bin, cli := RequireRedisBinaries(t)
	c := &RedisCluster{}
	for range 3 {
		s := startClusterNode(t, bin)
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if cfg.replicas {
		for _, m := range c.Nodes {
			c.Replicas = append(c.Replicas, startReplica(ctx, t, bin, m))
		}
	}
	if err := c.waitSettled(ctx, true); err != nil {
		t.Fatalf("cluster not ready within %v: %v", clusterReadyTimeout, err)
	}
	// go-redis keeps the seed slice it is given and appends the nodes it
	// discovers to it: without spare capacity each client appends to a copy
	// of its own, not into an array other clients of the same seeds read.
	c.Addrs = slices.Clip(c.Addrs)
	return c
}

// startClusterNode starts one cluster-enabled server.
func startClusterNode(t testing.TB, bin string) *RedisServer {
	t.Helper()
	busPort, err := freePort()
	if err != nil {
		t.Fatalf("free port for the cluster bus: %v", err)
	}
	s, err := startRedis(t, bin, func(string) []string {
		return []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
			// An explicit bus port: the default port+10000 may be taken
			// or beyond 65535 for a high ephemeral port.
			"--cluster-port", strconv.Itoa(busPort),
			// A replica's first sync starts at once, not after the
			// default 5 s wait for more replicas to share it.
			"--repl-diskless-sync-delay", "0",
		}
	})
	if err != nil {
		t.Fatalf("start cluster node: %v", err)
	}
	s.busPort = busPort
	return s
}

// startReplica starts a node, introduces it to master and makes it
// master's replica.
func startReplica(ctx context.Context, t testing.TB, bin string, master *RedisServer) *RedisServer {
	t.Helper()
	r := startClusterNode(t, bin)
	host, port, _ := net.SplitHostPort(master.Addr)
	// The bus port must be given: it is not the default port+10000.
	if _, err := r.command("CLUSTER", "MEET", host, port, strconv.Itoa(master.busPort)); err != nil {
		t.Fatalf("CLUSTER MEET from %s to %s: %v", r.Addr, master.Addr, err)
	}
	id, err := master.NodeID()
	if err != nil {
		t.Fatalf("CLUSTER MYID of %s: %v", master.Addr, err)
	}
	// REPLICATE fails with "Unknown node" until the handshake of MEET has
	// told the new node about the master.
	for {
		_, err := r.command("CLUSTER", "REPLICATE", id)
		if err == nil {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("CLUSTER REPLICATE %s on %s: %v", master.Addr, r.Addr, err)
		}
		time.Sleep(redisPollInterval)
	}
}

// NodeID returns the cluster node ID of a cluster node (CLUSTER MYID).
func (s *RedisServer) NodeID() (string, error) { return s.command("CLUSTER", "MYID") }

// All returns every node: the masters at the start, then the replicas.
func (c *RedisCluster) All() []*RedisServer {
	return append(append([]*RedisServer(nil), c.Nodes...), c.Replicas...)
}

// ReplicaOf returns the node that is now the replica of the master at
// addr, or nil when it has none.
func (c *RedisCluster) ReplicaOf(addr string) *RedisServer {
	_, port, _ := net.SplitHostPort(addr)
	for _, n := range c.All() {
		info, err := n.command("INFO", "replication")
		if err == nil && infoField(info, "role") == "slave" && infoField(info, "master_port") == port {
			return n
		}
	}
	return nil
}

// Failover makes replica the master of its master's slots with CLUSTER
// FAILOVER — the manual, lossless kind: the master stops taking writes
// until the replica has caught up, then the replica wins an election — and
// waits until the cluster has settled: every node ok and agreeing on the
// roles, the demoted master a replica in sync with the new one.
func (c *RedisCluster) Failover(ctx context.Context, replica *RedisServer) error {
	info, err := replica.command("INFO", "replication")
	if err != nil {
		return err
	}
	if infoField(info, "role") != "slave" {
		return fmt.Errorf("failover: %s is not a replica", replica.Addr)
	}
	if _, err := replica.command("CLUSTER", "FAILOVER"); err != nil {
		return fmt.Errorf("failover: CLUSTER FAILOVER on %s: %w", replica.Addr, err)
	}
	for {
		info, err := replica.command("INFO", "replication")
		if err == nil && infoField(info, "role") == "master" {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("failover: %s not a master: %w (%v)", replica.Addr, ctx.Err(), err)
		}
		time.Sleep(redisPollInterval)
	}
	// Under load a replica's offset trails its master's by the writes in
	// flight: a link up and no sync in progress is in sync enough.
	return c.waitSettled(ctx, false)
}

// waitSettled waits until every node reports cluster_state:ok, knows every
// node, agrees with the others on each replica's master, and every replica
// has its link to its master up, with no sync in progress and, when
// sameOffset, at its master's replication offset.
func (c *RedisCluster) waitSettled(ctx context.Context, sameOffset bool) error {
	for {
		err := c.settled(sameOffset)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		time.Sleep(redisPollInterval)
	}
}

func (c *RedisCluster) settled(sameOffset bool) error {
	nodes := c.All()
	var roles string // every node's view of the roles, which must agree
	for _, n := range nodes {
		info, err := n.clusterInfo()
		if err != nil {
			return err
		}
		if infoField(info, "cluster_state") != "ok" {
			return fmt.Errorf("%s: cluster_state %s", n.Addr, infoField(info, "cluster_state"))
		}
		if k := infoField(info, "cluster_known_nodes"); k != strconv.Itoa(len(nodes)) {
			return fmt.Errorf("%s knows %s nodes of %d", n.Addr, k, len(nodes))
		}
		view, err := n.command("CLUSTER", "NODES")
		if err != nil {
			return err
		}
		r := rolesOf(view)
		if roles == "" {
			roles = r
		} else if r != roles {
			return fmt.Errorf("%s sees the roles as %s, another node as %s", n.Addr, r, roles)
		}
	}
	for _, n := range nodes {
		info, err := n.command("INFO", "replication")
		if err != nil {
			return err
		}
		if infoField(info, "role") != "slave" {
			continue
		}
		if infoField(info, "master_link_status") != "up" || infoField(info, "master_sync_in_progress") != "0" {
			return fmt.Errorf("replica %s: link %s, sync in progress %s", n.Addr,
				infoField(info, "master_link_status"), infoField(info, "master_sync_in_progress"))
		}
		if !sameOffset {
			continue
		}
		master := net.JoinHostPort(infoField(info, "master_host"), infoField(info, "master_port"))
		mi, err := (&RedisServer{Addr: master}).command("INFO", "replication")
		if err != nil {
			return err
		}
		if got, want := infoField(info, "slave_repl_offset"), infoField(mi, "master_repl_offset"); got != want {
			return fmt.Errorf("replica %s at offset %s, its master %s at %s", n.Addr, got, master, want)
		}
	}
	return nil
}

// rolesOf renders a CLUSTER NODES reply as a sorted list of "id:role:master"
// without the fields that differ between the nodes' views (myself, links,
// pings).
func rolesOf(nodes string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		role := "master"
		if strings.Contains(f[2], "slave") {
			role = "slave"
		}
		if strings.Contains(f[2], "fail") {
			role += "(fail)"
		}
		out = append(out, f[0]+":"+role+":"+f[3])
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// infoField returns the value of key in an INFO or CLUSTER INFO reply.
func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}
