package pgw

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis writes its own lines ("redis: connection pool: failed to dial
// after 5 attempts: …") to stderr through one process-wide logger, which
// bypasses the gateway's. A gateway on a Redis backend installs redisLog in
// its place: the lines go to the logger of the open gateway built last, at
// Debug — the gateway itself logs each outage, once, at Warn. A gateway
// that is closed (or whose New failed) gets none: go-redis may still log
// while its pool winds down.
var (
	redisLogOnce   atomic.Bool
	redisLogTarget atomic.Pointer[redisRoute]

	redisLogMu     sync.Mutex
	redisLogRoutes []*redisRoute // the open gateways' routes, oldest first
)

// redisRoute is one gateway's claim on go-redis's lines. writing counts
// the lines being written to l; once stopped is set, none starts, and stop
// waits for those under way, so that a closed gateway's logger gets no line
// after its Close returned.
type redisRoute struct {
	l       *slog.Logger
	writing atomic.Int32
	stopped atomic.Bool
}

// routeRedisLog sends go-redis's own log lines to l from now on, until the
// route returned is stopped.
func routeRedisLog(l *slog.Logger) *redisRoute {
	r := &redisRoute{l: l}
	redisLogMu.Lock()
	redisLogRoutes = append(redisLogRoutes, r)
	redisLogTarget.Store(r)
	redisLogMu.Unlock()
	if redisLogOnce.CompareAndSwap(false, true) {
		goredis.SetLogger(redisLog{})
	}
	return r
}

// stop ends the route: go-redis's lines go to the logger of the open
// gateway built last before it, or nowhere. A nil route does nothing.
func (r *redisRoute) stop() {
	if r == nil {
		return
	}
	redisLogMu.Lock()
	redisLogRoutes = slices.DeleteFunc(redisLogRoutes, func(o *redisRoute) bool { return o == r })
	if n := len(redisLogRoutes); n > 0 {
		redisLogTarget.Store(redisLogRoutes[n-1])
	} else {
		redisLogTarget.Store(nil)
	}
	redisLogMu.Unlock()
	r.stopped.Store(true)
	for r.writing.Load() > 0 { // a line that found r before it stopped
		runtime.Gosched()
	}
}

// redisLog is go-redis's logger interface over the gateway's slog logger.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	r := redisLogTarget.Load()
	if r == nil {
		return
	}
	r.writing.Add(1)
	defer r.writing.Add(-1)
	if r.stopped.Load() || !r.l.Enabled(ctx, slog.LevelDebug) {
		return // its gateway closed since: the line is dropped
	}
	r.l.LogAttrs(ctx, slog.LevelDebug, "pgw: go-redis", slog.String("detail", fmt.Sprintf(format, v...)))
}
