package pgw

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blockingHandler holds every record it handles until release is closed.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) Handle(context.Context, slog.Record) error {
	h.entered <- struct{}{}
	<-h.release
	return nil
}
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler      { return h }

// TestAStoppedRedisLogRouteGetsNoLineAfterItsStopReturned: a go-redis line
// that found a gateway's route before the gateway closed is written before
// stop returns, never after it (and one that finds it stopped is dropped).
func TestAStoppedRedisLogRouteGetsNoLineAfterItsStopReturned(t *testing.T) {
	h := &blockingHandler{entered: make(chan struct{}, 1), release: make(chan struct{})}
	r := routeRedisLog(slog.New(h))
	written := make(chan struct{})
	go func() {
		redisLog{}.Printf(context.Background(), "dial %s", "failed")
		close(written)
	}()
	<-h.entered // the line is being written to r's logger

	stopped := make(chan struct{})
	go func() {
		r.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while a line was still being written to its gateway's logger")
	case <-time.After(100 * time.Millisecond): // stop waits for the line, however long
	}
	close(h.release)
	<-written
	<-stopped

	redisLog{}.Printf(context.Background(), "after %s", "stop")
	select {
	case <-h.entered:
		t.Fatal("a line reached the logger of a stopped route")
	default:
	}
	require.NotSame(t, r, redisLogTarget.Load(), "the stopped route is no one's target")
}
