package pgw_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// Calls admitted by Redis that end after Redis went silent leave their
// outcomes to the writer: the calls return as soon as their upstream
// answered, and Close gives the queued outcomes its flush bound and
// returns, counting them failed or dropped, never written.
func TestRedisCloseFlushesWithinItsBoundOnASilentRedis(t *testing.T) {
	const calls = 4
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
	gw, _ := newGateway(t, env)
	for range calls {
		up.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: 300 * time.Millisecond})
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := gw.Chat(ctx, hello())
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return up.Requests(testutil.Chat) == calls }, 5*time.Second, 5*time.Millisecond,
		"every call admitted through redis")
	px.SetMode(testutil.ProxyBlackhole)
	ended := time.Now()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Less(t, time.Since(ended), 2*time.Second, "the calls did not wait for their give-back")

	start := time.Now()
	require.NoError(t, gw.Close())
	took := time.Since(start)
	st := gw.OutcomeWriterStats()
	t.Logf("Close took %v; writer: %+v", took.Round(time.Millisecond), st)
	// The flush bound is 2 s; a cancelled write and the prober's own
	// timeout come on top.
	assert.Less(t, took, 4*time.Second, "Close returns within its flush bound")
	assert.Zero(t, st.Written, "nothing reached a silent redis")
	assert.Equal(t, uint64(calls), st.Failed+st.Dropped, "every outcome is counted")
	assert.Zero(t, st.Queued)
}
