package pgw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A hedge loser gives its admission back on its own goroutine, after the
// call returned. Close must wait for that give-back as it waits for calls:
// otherwise the loser's outcome reaches a closed writer and is dropped, its
// quota slot (or probe lease) left to expire in Redis.
func TestCloseWaitsForAHedgeLoserToGiveBack(t *testing.T) {
	srv := testutil.StartRedis(t)
	s, err := config.FromMap(map[string]string{
		"PGW_BREAKER_BACKEND":    "redis",
		"PGW_REDIS_URL":          "redis://" + srv.Addr + "/0",
		"PGW_REDIS_PREFIX":       "pgw-test-close-hedge-loser",
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "slow,fast",
		"RERANK__HEDGE_AFTER_S":  "0.01",
		"RERANK__SLOW__PRIORITY": "0",
		"RERANK__FAST__PRIORITY": "1",
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(testLogger(t)))
	require.NoError(t, err)

	cancelled := make(chan struct{})
	release := make(chan struct{})
	v, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			close(cancelled)
			<-release // a transport slow to notice its cancellation
			return "", pgw.Usage{}, ctx.Err()
		}
		return "ranked by " + src.Name, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "ranked by fast", v)
	<-cancelled

	closed := make(chan error, 1)
	go func() { closed <- gw.Close() }()
	// Close may not return while the loser holds its admission; give a
	// Close that does not wait the chance to return first, then let the
	// loser go. Either order ends: the check is what the writer did.
	select {
	case <-closed:
		close(release)
		require.NoError(t, gw.Close())
	case <-time.After(200 * time.Millisecond):
		close(release)
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not return once the loser gave back")
		}
	}
	st := gw.OutcomeWriterStats()
	assert.Zero(t, st.Dropped, "the loser's outcome was dropped: Close did not wait for it")
	assert.Equal(t, uint64(2), st.Written)
}
