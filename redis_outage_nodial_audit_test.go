package pgw_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// auditNoDialProxy stands for Redis in front of a real one: it forwards
// every connection until cut, then accepts each new one and closes it at
// once (a Redis that resets), counting every accept: each dial the gateway
// makes is one.
type auditNoDialProxy struct {
	ln       net.Listener
	target   string
	cut      atomic.Bool
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func auditNoDialListen(t *testing.T, target string) *auditNoDialProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &auditNoDialProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			if p.cut.Load() {
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cutAll()
		p.wg.Wait()
	})
	return p
}

// cutAll closes every forwarded connection; new ones are closed at once.
func (p *auditNoDialProxy) cutAll() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// During an outage no caller dials Redis: once the prober has started it,
// a burst of calls — served by the local gates under fail_open, refused at
// once with ErrUnreachable under fail_closed — opens no connection to
// Redis; only the prober's own probe (at most one, two tries) may fall in
// the burst.
func TestAuditRedisNoCallerDialsDuringAnOutage(t *testing.T) {
	for _, mode := range []string{"fail_open", "fail_closed"} {
		t.Run(mode, func(t *testing.T) {
			srv := testutil.StartRedis(t)
			red := auditNoDialListen(t, srv.Addr)
			s, err := config.FromMap(map[string]string{
				"PGW_BREAKER_BACKEND":            "redis",
				"PGW_REDIS_URL":                  "redis://" + red.ln.Addr().String() + "/0",
				"PGW_REDIS_PREFIX":               "pgw-audit-nodial",
				"PGW_REDIS_DOWN":                 mode,
				"PGW_REDIS_PROBE_INTERVAL_S":     "2",  // the first probe after the outage's start is 2 s later
				"PGW_REDIS_PROBE_BACKOFF_S":      "30", // and few after it
				"PGW_SCOPES":                     "RERANK",
				"RERANK__SOURCES":                "primary,backup",
				"RERANK__PRIMARY__RPM":           "6000",
				"RERANK__PRIMARY__MAX_IN_FLIGHT": "8",
				"RERANK__BACKUP__TPM":            "100000",
			})
			require.NoError(t, err)
			var logs syncBuffer
			gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = gw.Close() })
			_, err = pgw.Call(context.Background(), gw, "RERANK", rerank)
			require.NoError(t, err, "on Redis")

			red.cutAll()
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "mode="+mode) }, 10*time.Second, 5*time.Millisecond,
				"the prober starts the outage")
			time.Sleep(50 * time.Millisecond) // the outage's second probe has returned

			before := red.accepted.Load()
			var wg sync.WaitGroup
			var served, refused atomic.Int64
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 25 {
						_, err := pgw.Call(context.Background(), gw, "RERANK", rerank)
						switch {
						case err == nil:
							served.Add(1)
						case errors.Is(err, redis.ErrUnreachable):
							refused.Add(1)
						default:
							t.Errorf("call: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			dials := red.accepted.Load() - before
			assert.LessOrEqual(t, dials, int64(2), "connections opened to Redis by 200 calls during the outage (the prober's one probe may account for 2)")
			if mode == "fail_open" {
				assert.EqualValues(t, 200, served.Load(), "every call served by the local gates")
			} else {
				assert.EqualValues(t, 200, refused.Load(), "every call refused at once with ErrUnreachable")
			}
		})
	}
}
