package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// How long a sentinel set-up may take to be ready (replica in sync, replica
// known to the sentinel) and a failover to complete. Both normally take
// about a second; generous because the test machine is shared.
const sentinelTimeout = 20 * time.Second

// RedisSentinel is a Sentinel-managed master–replica pair owned by a test: a
// master redis-server, one replica of it and one Sentinel watching them
// (quorum 1), all on loopback. Everything is stopped by t.Cleanup. It keeps
// no state of its own — who is master is asked of the Sentinel — so it is
// safe for concurrent use.
type RedisSentinel struct {
	// MasterName is the name the Sentinel monitors the master under: the
	// MasterName of a go-redis failover client.
	MasterName string
	// SentinelAddrs are the host:port of the Sentinels (one).
	SentinelAddrs []string
	// Nodes are the data servers: Nodes[0] starts as the master, Nodes[1] as
	// its replica; after Failover the Sentinel reports Nodes[1] as master.
	Nodes []*RedisServer
	// Sentinel is the Sentinel process (redis-server --sentinel).
	Sentinel *RedisServer
}

// StartRedisSentinel starts a master, a replica of it (--replicaof) and a
// Sentinel monitoring the master (quorum 1, down-after-milliseconds 1000,
// failover-timeout 3000, config in a writable file of t.TempDir(), as
// Sentinel requires), each on a free loopback port. It returns once the
// replica is in sync and the Sentinel reports the master and the replica as
// fit for promotion, so Failover can run at once. It skips (or, with CI=true,
// fails) the test when redis-server is not installed.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	bin := requireBinaries(t, "redis-server")[0]
	// Redis 7 waits 5 s (repl-diskless-sync-delay) for more replicas before a
	// full sync; one replica is all there will be.
	noSyncDelay := []string{"--repl-diskless-sync-delay", "0"}
	master, err := startRedis(t, bin, func(string) []string { return noSyncDelay })
	if err != nil {
		t.Fatalf("start sentinel master: %v", err)
	}
	host, port, _ := net.SplitHostPort(master.Addr)
	replica, err := startRedis(t, bin, func(string) []string {
		return append([]string{"--replicaof", host, port}, noSyncDelay...)
	})
	if err != nil {
		t.Fatalf("start sentinel replica: %v", err)
	}
	s := &RedisSentinel{MasterName: "pgw", Nodes: []*RedisServer{master, replica}}
	deadline := time.Now().Add(sentinelTimeout)
	s.await(t, deadline, "replica "+replica.Addr+" in sync with "+master.Addr, func() error {
		return replicaInSync(master, replica)
	})

	// Started after the sync: the Sentinel learns the replica from its first
	// INFO to the master instead of the next one, 10 s later.
	s.Sentinel, err = startSentinel(t, bin, s.MasterName, master.Addr)
	if err != nil {
		t.Fatalf("start sentinel: %v", err)
	}
	s.SentinelAddrs = []string{s.Sentinel.Addr}
	s.await(t, deadline, "sentinel reporting master "+master.Addr+" and replica "+replica.Addr, func() error {
		addr, err := s.masterAddr()
		if err != nil {
			return err
		}
		if addr != master.Addr {
			return fmt.Errorf("sentinel reports master %s", addr)
		}
		return s.promotable(replica.Addr)
	})
	return s
}

// MasterAddr returns the address the Sentinel reports for the master now.
func (s *RedisSentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	addr, err := s.masterAddr()
	if err != nil {
		t.Fatalf("sentinel %s: master address of %q: %v", s.Sentinel.Addr, s.MasterName, err)
	}
	return addr
}

// Failover runs SENTINEL FAILOVER and waits until the Sentinel reports the
// former replica as the master (after the replica answered INFO with
// role:master), then returns that server — in about a second. It is meant
// once per set-up: the former master, still running, is turned into a
// replica by the Sentinel only some 10 s later, and a second Failover, which
// waits for the Sentinel to list it as a promotable replica, gives up after
// 20 s (the Sentinel reads a replica's state every 10 s).
func (s *RedisSentinel) Failover(t testing.TB) *RedisServer {
	t.Helper()
	from := s.MasterAddr(t)
	var target *RedisServer
	for _, n := range s.Nodes {
		if n.Addr != from {
			target = n
		}
	}
	if target == nil {
		t.Fatalf("sentinel reports master %s, and no other node to fail over to", from)
	}
	deadline := time.Now().Add(sentinelTimeout)
	s.await(t, deadline, "sentinel accepting FAILOVER to "+target.Addr, func() error {
		if err := s.promotable(target.Addr); err != nil {
			return err
		}
		_, err := respDo(s.Sentinel.Addr, "SENTINEL", "FAILOVER", s.MasterName)
		if err != nil && strings.HasPrefix(err.Error(), "INPROG") {
			return nil // ours, accepted by an earlier attempt
		}
		return err
	})
	s.await(t, deadline, "sentinel reporting "+target.Addr+" as master after FAILOVER", func() error {
		addr, err := s.masterAddr()
		if err == nil && addr != target.Addr {
			err = fmt.Errorf("sentinel still reports master %s", addr)
		}
		return err
	})
	return target
}

// await polls ready until it returns nil; at the deadline it fails the test
// with the last error and the tails of every log.
func (s *RedisSentinel) await(t testing.TB, deadline time.Time, what string, ready func() error) {
	t.Helper()
	for {
		err := ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after %v: %v\n%s", what, sentinelTimeout, err, s.logs())
		}
		time.Sleep(redisPollInterval)
	}
}

func (s *RedisSentinel) logs() string {
	var b strings.Builder
	for i, n := range s.Nodes {
		fmt.Fprintf(&b, "--- node %d (%s) log:\n%s\n", i, n.Addr, n.logTail())
	}
	if s.Sentinel != nil {
		fmt.Fprintf(&b, "--- sentinel (%s) log:\n%s\n", s.Sentinel.Addr, s.Sentinel.logTail())
	}
	return b.String()
}

func (s *RedisSentinel) masterAddr() (string, error) {
	reply, err := respDo(s.Sentinel.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName)
	if err != nil {
		return "", err
	}
	hp, ok := reply.([]any)
	if !ok || len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s: unexpected reply %v", s.MasterName, reply)
	}
	host, _ := hp[0].(string)
	port, _ := hp[1].(string)
	return net.JoinHostPort(host, port), nil
}

// promotable reports (as nil) whether the Sentinel lists addr as a healthy
// replica whose own INFO says its link to the master is up — what SENTINEL
// FAILOVER requires of the replica it promotes (NOGOODSLAVE otherwise).
func (s *RedisSentinel) promotable(addr string) error {
	reply, err := respDo(s.Sentinel.Addr, "SENTINEL", "REPLICAS", s.MasterName)
	if err != nil {
		return err
	}
	list, _ := reply.([]any)
	for _, r := range list {
		f := fields(r)
		if net.JoinHostPort(f["ip"], f["port"]) != addr {
			continue
		}
		if f["flags"] != "slave" || f["master-link-status"] != "ok" {
			return fmt.Errorf("sentinel lists replica %s with flags=%s master-link-status=%s", addr, f["flags"], f["master-link-status"])
		}
		return nil
	}
	return fmt.Errorf("sentinel does not list %s among the replicas", addr)
}

// fields turns a flat [k1 v1 k2 v2 …] reply into a map.
func fields(reply any) map[string]string {
	kv, _ := reply.([]any)
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		v, _ := kv[i+1].(string)
		m[k] = v
	}
	return m
}

// replicaInSync reports (as nil) whether replica's link to master is up and
// master counts it as an online replica.
func replicaInSync(master, replica *RedisServer) error {
	info, err := replica.command("INFO", "replication")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return errors.New("replica link to the master not up")
	}
	info, err = master.command("INFO", "replication")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "state=online") {
		return errors.New("master does not count the replica as online")
	}
	return nil
}

// startSentinel starts redis-server in Sentinel mode monitoring masterAddr as
// name, with its cleanup registered. Sentinel insists on a config file it can
// rewrite, given as the first argument, so startRedis's command line does not
// fit; the process is otherwise a RedisServer like the others. A port taken
// between picking and binding is retried, as in startRedis.
func startSentinel(t testing.TB, bin, name, masterAddr string) (*RedisServer, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(masterAddr)
	var lastErr error
	for range 3 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		// logfile is relative to the process's working directory, dir.
		body := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
logfile redis.log
sentinel monitor %[2]s %[3]s %[4]s 1
sentinel down-after-milliseconds %[2]s 1000
sentinel failover-timeout %[2]s 3000
sentinel parallel-syncs %[2]s 1
`, p, name, host, port)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", conf, err)
		}
		s := &RedisServer{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)),
			bin:  bin,
			dir:  dir,
			args: []string{conf, "--sentinel"},
		}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s, nil
		}
	}
	return nil, lastErr
}

// respDo sends one command to addr on a fresh connection and returns the
// reply: a string for a status, an integer or a bulk string, nil for a nil
// reply, []any for an array (Sentinel answers with arrays, which
// RedisServer.Do does not read); an error reply comes back as an error.
func respDo(addr string, args ...string) (any, error) {
	replies, err := respPipeline(addr, args)
	if err != nil {
		return nil, err
	}
	return replies[0], nil
}

// respPipeline sends commands to addr on one fresh connection, in order, and
// returns their replies as respDo does; the first error reply ends it. One
// connection matters for WAIT, which waits for the writes of its own
// connection only.
func respPipeline(addr string, cmds ...[]string) ([]any, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var req bytes.Buffer
	for _, args := range cmds {
		fmt.Fprintf(&req, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	replies := make([]any, len(cmds))
	for i := range cmds {
		if replies[i], err = readReply(r); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(cmds[i], " "), err)
		}
	}
	return replies, nil
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < -1 {
			return nil, fmt.Errorf("bad length in %q", line)
		}
		if n == -1 {
			return nil, nil
		}
		if line[0] == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return string(buf[:n]), nil
		}
		items := make([]any, n)
		for i := range items {
			if items[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}
