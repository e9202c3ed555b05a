package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// startRedis starts a throwaway redis-server (loopback, no persistence) on a
// free port, stopped by b's cleanup. Without the binary it skips b with a
// NOTE that cmd/ratios prints. Benchmarks never run in CI, so unlike the
// test helpers in internal/testutil it skips even under CI=true.
func startRedis(b *testing.B) *goredis.Client {
	b.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("NOTE: distributed comparison skipped: redis-server is not on PATH (Debian: apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("finding a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", b.TempDir())
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting redis-server: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	c := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			b.Fatalf("redis-server on port %d did not answer PING within 10s: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdCounter is a go-redis hook that counts the commands sent, each command
// of a pipeline included: the round trips a governed call costs. The
// handshake of a new pooled connection (HELLO, CLIENT SETINFO) is not a gate
// operation and is not counted.
// With trips set it counts network round trips instead: one per command, one
// per pipeline.
type cmdCounter struct {
	n     atomic.Int64
	trips bool
}

func handshake(cmd goredis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

func (h *cmdCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *cmdCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !handshake(cmd) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *cmdCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if h.trips {
			h.n.Add(1)
			return next(ctx, cmds)
		}
		for _, cmd := range cmds {
			if !handshake(cmd) {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// discardLogger keeps state-change log lines out of the benchmark output.
var discardLogger = slog.New(slog.DiscardHandler)
