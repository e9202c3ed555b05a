package pgw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A caller whose ctx has no deadline and is cancelled while its gate round
// trip waits on a silent Redis gets ctx.Err() back at once, and so does a
// call that the gateway's Close interrupts there: neither waits for the
// Redis client's read timeout (a minute here). The prober is slowed down
// so that the call, not the prober, is what meets the silence.
func TestRedisCancelledCallWithoutDeadlineReturnsAtOnceOnASilentRedis(t *testing.T) {
	for _, end := range []string{"cancel", "close"} {
		t.Run(end, func(t *testing.T) {
			srv := testutil.StartRedis(t)
			px := testutil.StartProxy(t, srv.Addr)
			s, err := config.FromMap(map[string]string{
				"PGW_BREAKER_BACKEND":        "redis",
				"PGW_REDIS_URL":              "redis://" + px.Addr() + "/0?read_timeout=1m&write_timeout=1m",
				"PGW_REDIS_PREFIX":           "pgw-test-" + strings.ReplaceAll(t.Name(), "/", "-"),
				"PGW_REDIS_PROBE_INTERVAL_S": "600",
				"PGW_SCOPES":                 "RERANK",
				"RERANK__SOURCES":            "primary",
				"RERANK__PRIMARY__RPM":       "600",
			})
			require.NoError(t, err)
			gw, err := pgw.New(context.Background(), *s)
			require.NoError(t, err)
			t.Cleanup(func() { _ = gw.Close() })
			rank := func(context.Context, pgw.Source) (string, pgw.Usage, error) { return "ranked", pgw.Usage{}, nil }
			got, err := pgw.Call(context.Background(), gw, "RERANK", rank)
			require.NoError(t, err)
			require.Equal(t, "ranked", got)
			require.Eventually(t, func() bool { return gw.OutcomeWriterStats().Written == 1 }, 10*time.Second, time.Millisecond,
				"the first call's outcome is in Redis")

			px.SetMode(testutil.ProxyBlackhole)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := pgw.Call(ctx, gw, "RERANK", rank)
				done <- err
			}()
			require.Eventually(t, func() bool { return px.Swallowed() > 0 }, 10*time.Second, time.Millisecond,
				"the call's admission reached the silent Redis")
			closed := make(chan error, 1)
			if end == "cancel" {
				cancel()
			} else {
				go func() { closed <- gw.Close() }()
			}
			select {
			case err := <-done:
				if end == "cancel" {
					assert.ErrorIs(t, err, context.Canceled)
				} else {
					assert.ErrorIs(t, err, pgw.ErrClosed)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the call did not return when its ctx ended; it waits for the Redis read timeout")
			}
			if end == "close" {
				select {
				case err := <-closed:
					assert.False(t, errors.Is(err, context.DeadlineExceeded), "Close: %v", err)
				case <-time.After(20 * time.Second):
					t.Fatal("Close did not return")
				}
			}
		})
	}
}
