package pgw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A call admitted by Redis that fails (its stream cut) after Redis went silent leaves its
// Failure to the outcome writer, which tries Redis for its whole write
// timeout. Once the outage is known the source's gates answer from local
// memory, which that write cannot change: the calls of the outage do not
// wait for it.
func TestRedisOutageCallsDoNotWaitForAPendingRedisOutcome(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
	env["CHAT__FAILURE_THRESHOLD"] = "100"
	env["EMBEDDING__EMB__RPM"] = "1000"
	env["PGW_REDIS_PROBE_INTERVAL_S"] = "0.1"
	env["PGW_REDIS_PROBE_TIMEOUT_S"] = "0.04"
	env["PGW_REDIS_PROBE_BACKOFF_S"] = "0.2"
	gw, _ := newGateway(t, env)

	up.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: 300 * time.Millisecond, Cut: true})
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := gw.Chat(ctx, hello())
		first <- err
	}()
	require.Eventually(t, func() bool { return up.Requests(testutil.Chat) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the first call admitted through redis")
	px.SetMode(testutil.ProxyBlackhole)
	cut := time.Now()
	// The prober sees the outage within two 100 ms intervals: the embedding
	// scope is then served locally at once.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the outage is seen")
	// The stream is cut 300 ms after it began; its Failure goes to the
	// writer, which waits for the silent Redis until its 1 s write timeout.
	time.Sleep(time.Until(cut.Add(400 * time.Millisecond)))

	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		_, err := gw.Chat(ctx, hello())
		cancel()
		require.NoError(t, err, "served by the local gates without waiting for the writer")
	}
	assert.NoError(t, <-first, "the first call's retry succeeds too")
}
