package pgw

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis writes its own lines ("redis: connection pool: failed to dial
// after 5 attempts: …") to stderr through one process-wide logger, which
// bypasses the gateway's. A gateway on a Redis backend installs redisLog in
// its place: the lines go to the logger of the gateway built last, at Debug —
// the gateway itself logs each outage, once, at Warn.
var (
	redisLogOnce   atomic.Bool
	redisLogTarget atomic.Pointer[slog.Logger]
)

// routeRedisLog sends go-redis's own log lines to l from now on.
func routeRedisLog(l *slog.Logger) {
	redisLogTarget.Store(l)
	if redisLogOnce.CompareAndSwap(false, true) {
		goredis.SetLogger(redisLog{})
	}
}

// redisLog is go-redis's logger interface over the gateway's slog logger.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	l := redisLogTarget.Load()
	if l == nil || !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	l.LogAttrs(ctx, slog.LevelDebug, "pgw: go-redis", slog.String("detail", fmt.Sprintf(format, v...)))
}
