package faultsuite

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The workers' "no goroutine left after Close" rests on leftoverGoroutines:
// a gateway on Redis not closed (its prober and outcome writer) and an
// HTTP pool not emptied (its connections' loops) must count, and stop
// counting once closed; the worker's own goroutines never count.
func TestLeftoverGoroutinesCountsAGatewayAndAPoolNotClosed(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	hs := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hs.Close()
	base, _ := leftoverGoroutines() // the test's own (testutil is under pgw's path too)
	env := Topology{Backend: "redis", RedisAddr: srv.Addr, Prefix: "pgw-fault-leftover", Down: "fail_open",
		Upstream1: up.URL, Upstream2: up.URL, StallWindow: time.Second, Poll: 50 * time.Millisecond,
		FailureThreshold: 3, Cooldown: 200 * time.Millisecond, MaxCooldown: time.Second, Timeout: 2 * time.Second,
		ToolInFlight: 4, WideInFlight: 16}.Env()
	s, err := config.FromMap(env)
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	_, err = gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)

	pw := newPauseWatch(pauseTick) // the worker's own: never counted
	defer pw.close()

	n, stacks := leftoverGoroutines()
	assert.Greater(t, n, base, "an open gateway leaves goroutines")
	assert.Regexp(t, `admission\.\(\*Writer\)|gate/redis\.\(\*Prober\)`, stacks, "the gateway's outcome writer or prober")
	assert.NotContains(t, stacks, "(*pauseWatch).run", "the worker's own")
	require.NoError(t, gw.Close())
	settled := func(what string) {
		t.Helper()
		assert.Eventually(t, func() bool {
			n, stacks = leftoverGoroutines()
			return n <= base
		}, 2*time.Second, 5*time.Millisecond, "%s: nothing left (closed connections retire their loops):\n%s", what, stacks)
	}
	settled("the gateway closed")

	hc := &http.Client{Transport: &http.Transport{}}
	resp, err := hc.Get(hs.URL)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	n, stacks = leftoverGoroutines()
	assert.Greater(t, n, base, "a kept-alive connection leaves goroutines")
	assert.Contains(t, stacks, "net/http.(*persistConn)", "the pool's")
	hc.CloseIdleConnections()
	settled("the pool emptied")
}
