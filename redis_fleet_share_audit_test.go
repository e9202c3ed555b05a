package pgw_test

import (
	"context"
	"errors"
	"log/slog"
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

// Three gateways (three processes of one service) on one Redis, each with
// its heartbeat in it, are cut off from it under fail_open: each one's local
// gates take a third of every limit, so the whole fleet's calls in flight
// stay within MAX_IN_FLIGHT and its admissions within the RPM, as the
// README's bound says (the limits here divide evenly: no extra admission
// per process).
func TestAuditRedisFleetOfGatewaysStaysWithinItsLimitsDuringAnOutage(t *testing.T) {
	const (
		procs       = 3
		maxInFlight = 6
		rpm         = 30
		goroutines  = 8
	)
	srv := testutil.StartRedis(t)
	prefix := "pgw-audit-fleet"
	var gws []*pgw.GatewayClient
	var pxs []*testutil.Proxy
	var logs []*syncBuffer
	for range procs {
		px := testutil.StartProxy(t, srv.Addr)
		s, err := config.FromMap(map[string]string{
			"PGW_BREAKER_BACKEND":            "redis",
			"PGW_REDIS_URL":                  "redis://" + px.Addr() + "/0",
			"PGW_REDIS_PREFIX":               prefix,
			"PGW_REDIS_PROBE_INTERVAL_S":     "0.2",
			"PGW_SCOPES":                     "RERANK",
			"RERANK__SOURCES":                "primary",
			"RERANK__QUOTA_FULL":             "fail_fast",
			"RERANK__PRIMARY__RPM":           "30",
			"RERANK__PRIMARY__MAX_IN_FLIGHT": "6",
		})
		require.NoError(t, err)
		lb := new(syncBuffer)
		gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo}))))
		require.NoError(t, err)
		t.Cleanup(func() { _ = gw.Close() })
		gws, pxs, logs = append(gws, gw), append(pxs, px), append(logs, lb)
	}
	require.Eventually(t, func() bool {
		out, err := srv.Do("ZCARD", prefix+":{pgw-fleet}:alive")
		return err == nil && strings.TrimSpace(out) == "3"
	}, 10*time.Second, 10*time.Millisecond, "each gateway's heartbeat is in Redis")
	time.Sleep(time.Second) // every prober (0.2 s apart) has counted the fleet since

	for _, px := range pxs {
		px.SetMode(testutil.ProxyReset)
	}
	for i, lb := range logs {
		require.Eventually(t, func() bool { return strings.Contains(lb.String(), "gates serving from local fallbacks") }, 10*time.Second, 5*time.Millisecond,
			"gateway %d's prober starts the outage", i)
	}

	var inFlight, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(400 * time.Millisecond)
	for _, gw := range gws {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					_, err := pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
						admitted.Add(1)
						n := inFlight.Add(1)
						for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
						}
						time.Sleep(2 * time.Millisecond)
						inFlight.Add(-1)
						return "ranked", pgw.Usage{}, nil
					})
					if errors.Is(err, redis.ErrUnreachable) {
						t.Errorf("fail_open call: %v", err)
						return
					}
					if err != nil {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("fleet of %d during the outage: peak in flight %d (limit %d), admitted %d (RPM %d)", procs, peak.Load(), maxInFlight, admitted.Load(), rpm)
	assert.LessOrEqual(t, peak.Load(), int64(maxInFlight), "the fleet's calls in flight during the outage")
	assert.LessOrEqual(t, admitted.Load(), int64(rpm), "the fleet's admissions during the outage")
	assert.Positive(t, admitted.Load(), "the local gates served calls")
}
