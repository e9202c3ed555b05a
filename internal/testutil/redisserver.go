package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// How long a started redis-server may take to answer PING, and a cluster to
// report cluster_state:ok. Generous: the test machine is shared.
const (
	redisStartTimeout   = 10 * time.Second
	clusterReadyTimeout = 20 * time.Second
	redisPollInterval   = 10 * time.Millisecond
)

// RequireRedisBinaries returns the paths of redis-server and redis-cli. When
// either is missing it skips the test with a message saying so, or — when the
// environment has CI=true — fails it: CI must run the real-Redis tests.
func RequireRedisBinaries(t testing.TB) (server, cli string) {
	t.Helper()
	paths := requireBinaries(t, "redis-server", "redis-cli")
	return paths[0], paths[1]
}

// requireBinaries looks every name up on PATH; it skips the test (fails it
// with CI=true) naming the missing ones.
func requireBinaries(t testing.TB, names ...string) []string {
	t.Helper()
	paths := make([]string, len(names))
	var missing []string
	for i, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			missing = append(missing, n)
		}
		paths[i] = p
	}
	if len(missing) == 0 {
		return paths
	}
	msg := fmt.Sprintf("real-Redis test needs %s on PATH (Debian: apt-get install redis-server)", strings.Join(missing, " and "))
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true forbids skipping", msg)
	}
	t.Skip("skipped: " + msg)
	return nil
}

// RedisServer is one redis-server process owned by a test: loopback only, no
// persistence (--save ” --appendonly no), its own temporary directory. It is
// stopped by t.Cleanup. Stop and Restart let fault tests take it away and
// bring it back on the same address. Safe for concurrent use.
type RedisServer struct {
	// Addr is host:port of the server, stable across Restart.
	Addr string

	bin     string
	dir     string
	busPort int // the cluster bus port of a cluster node, else 0
	args    []string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartRedis starts a standalone redis-server on a free loopback port and
// waits until it answers PING. It skips (or, with CI=true, fails) the test
// when redis-server is not installed.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin := requireBinaries(t, "redis-server")[0]
	s, err := startRedis(t, bin, nil)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	return s
}

// startRedis picks a free port, starts the server with extra arguments and
// registers its cleanup. A port taken between picking and binding is retried.
func startRedis(t testing.TB, bin string, extra func(dir string) []string) (*RedisServer, error) {
	t.Helper()
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir := t.TempDir()
		args := []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
			"--logfile", "redis.log",
			"--daemonize", "no",
		}
		args = append(args, debugCommandArgs(bin)...)
		if extra != nil {
			args = append(args, extra(dir)...)
		}
		s := &RedisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), bin: bin, dir: dir, args: args}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s, nil
		}
	}
	return nil, lastErr
}

// debugCommandArgs lets loopback clients run DEBUG (fault tests use DEBUG
// SLEEP to make the server slow). Redis 7 refuses DEBUG by default and older
// servers do not know the option, so it is passed only to Redis 7 or later.
func debugCommandArgs(bin string) []string {
	debugOnce.Do(func() {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			return
		}
		// "Redis server v=7.0.15 sha=…"
		_, v, ok := strings.Cut(string(out), "v=")
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); ok && err == nil && n >= 7 {
			debugArgs = []string{"--enable-debug-command", "local"}
		}
	})
	return debugArgs
}

var (
	debugOnce sync.Once
	debugArgs []string
)

// start launches the process and waits for PING. Callers hold no lock.
func (s *RedisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server at %s is already running", s.Addr)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(redisStartTimeout)
	for {
		if reply, err := s.command("PING"); err == nil && reply == "PONG" {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("redis-server at %s exited at start: %s", s.Addr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.killLocked()
			return fmt.Errorf("redis-server at %s did not answer PING within %v: %s", s.Addr, redisStartTimeout, s.logTail())
		}
		time.Sleep(redisPollInterval)
	}
}

// Stop kills the server at once (SIGKILL: a crash, not a shutdown) and waits
// for the process to exit. Stopping a stopped server does nothing.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *RedisServer) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts a stopped server again on the same address, with no data.
func (s *RedisServer) Restart(t testing.TB) {
	t.Helper()
	var err error
	// The port was ours a moment ago; another process grabbing it in between
	// is possible but rare, so a few attempts suffice.
	for range 5 {
		if err = s.start(); err == nil {
			return
		}
	}
	t.Fatalf("restart redis-server: %v", err)
}

// ErrNilReply is what RedisServer.Do returns for a nil reply (a missing key).
var ErrNilReply = errors.New("redis nil reply")

// Do sends one command to the server on a fresh connection and returns the
// reply when it is a status, an integer or a bulk string; tests use it for
// administrative commands such as SCRIPT FLUSH.
func (s *RedisServer) Do(args ...string) (string, error) { return s.command(args...) }

// command speaks just enough RESP for PING, CLUSTER INFO and the like.
func (s *RedisServer) command(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err == nil && n == -1 {
			return "", ErrNilReply
		}
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad bulk header %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func (s *RedisServer) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

func (s *RedisServer) clusterInfo() (string, error) { return s.command("CLUSTER", "INFO") }

// freePort asks the kernel for a free loopback port. The port is released
// before the caller binds it; startRedis retries if someone took it meanwhile.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
