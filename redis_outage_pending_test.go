package pgw_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
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
// wait for it. Each returns while the write is still under way, which the
// writer's counts show; were it to wait for the write, it would return once
// the write had failed.
func TestRedisOutageCallsDoNotWaitForAPendingRedisOutcome(t *testing.T) {
	// A trial in which the write ended before a call returned says nothing
	// of a machine that fell behind for the write's 1 s timeout; it starts
	// over, on a gateway of its own.
	for try := 1; ; try++ {
		require.LessOrEqual(t, try, 3, "every trial's pending write ended before its calls returned")
		if pendingOutcomeTrial(t) {
			return
		}
	}
}

// pendingOutcomeTrial is one run of
// TestRedisOutageCallsDoNotWaitForAPendingRedisOutcome; false: the write
// ended before the calls returned.
func pendingOutcomeTrial(t *testing.T) bool {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
	env["CHAT__FAILURE_THRESHOLD"] = "100"
	env["PGW_REDIS_PROBE_INTERVAL_S"] = "0.1"
	env["PGW_REDIS_PROBE_TIMEOUT_S"] = "0.04"
	env["PGW_REDIS_PROBE_BACKOFF_S"] = "0.2"
	logs := &outageLines{}
	gw, _ := newGateway(t, env, pgw.WithLogger(slog.New(logs)))

	up.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: 300 * time.Millisecond, Cut: true})
	var firstErr error
	first := make(chan struct{}) // closed when the first call returned
	go func() {
		defer close(first)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, firstErr = gw.Chat(ctx, hello())
	}()
	returned := func() bool {
		select {
		case <-first:
			return true
		default:
			return false
		}
	}
	require.Eventually(t, func() bool { return up.Requests(testutil.Chat) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the first call admitted through redis")
	px.SetMode(testutil.ProxyBlackhole)
	require.Eventually(t, logs.seen, 5*time.Second, 5*time.Millisecond, "the prober sees the outage")
	// The stream is cut 300 ms after it began; its Failure goes to the
	// writer, which waits for the silent Redis until its 1 s write timeout.
	// (Had the first call returned first, its Failure went another way; it
	// returns by its 10 s deadline.)
	require.Eventually(t, func() bool {
		st := gw.OutcomeWriterStats()
		return st.Unwritten > 0 || st.Written+st.Failed+st.Dropped > 0 || returned()
	}, 15*time.Second, time.Millisecond, "the first attempt's Failure handed to the writer, or the first call returned")
	pending := func() bool {
		st := gw.OutcomeWriterStats()
		return st.Unwritten == 1 && st.Written+st.Failed+st.Dropped == 0
	}
	if !pending() {
		st, early := gw.OutcomeWriterStats(), returned()
		<-first
		t.Logf("the Failure was not pending before the calls (the first call had returned: %v, with %v): %+v", early, firstErr, st)
		return false
	}

	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := gw.Chat(ctx, hello())
		cancel()
		require.NoError(t, err, "served by the local gates")
		if !pending() {
			t.Logf("the Failure was no longer pending when call %d returned: %+v", i+1, gw.OutcomeWriterStats())
			<-first
			return false
		}
	}
	<-first
	assert.NoError(t, firstErr, "the first call's retry succeeds too")
	return true
}

// outageLines is a slog handler that notes a "redis unreachable" line.
type outageLines struct {
	mu   sync.Mutex
	down bool
}

func (l *outageLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *outageLines) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "pgw: redis unreachable") {
		l.mu.Lock()
		l.down = true
		l.mu.Unlock()
	}
	return nil
}

func (l *outageLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *outageLines) WithGroup(string) slog.Handler      { return l }

func (l *outageLines) seen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}
