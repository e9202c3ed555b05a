package pgw_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// redisEnv is a CHAT scope (one source on up, whose breaker opens on one
// failure) and an EMBEDDING scope (one source at 2 requests per minute,
// failing fast when full) on the redis backends.
func redisEnv(t *testing.T, redisURL string, up *testutil.Upstream) map[string]string {
	return map[string]string{
		"PGW_BREAKER_BACKEND":      "redis",
		"PGW_REDIS_URL":            redisURL,
		"PGW_REDIS_PREFIX":         "pgw-test-" + strings.ReplaceAll(t.Name(), "/", "-"),
		"PGW_SCOPES":               "CHAT,EMBEDDING",
		"CHAT__SOURCES":            "solo",
		"CHAT__FAILURE_THRESHOLD":  "1",
		"CHAT__COOLDOWN_S":         "60",
		"CHAT__SOLO__BASE_URL":     up.URL,
		"EMBEDDING__SOURCES":       "emb",
		"EMBEDDING__QUOTA_FULL":    "fail_fast",
		"EMBEDDING__EMB__BASE_URL": up.URL,
		"EMBEDDING__EMB__RPM":      "2",
	}
}

// Two gateways on one Redis are two processes of one service: what one
// learns about a source, the other obeys.
func TestRedisBackendSharesBreakerAndQuotaBetweenGateways(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	env := redisEnv(t, "redis://"+srv.Addr+"/0", up)
	gw1, rec1 := newGateway(t, env)
	gw2, rec2 := newGateway(t, env)
	ctx := context.Background()

	_, err := gw1.Chat(ctx, hello())
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe, "one failure opens the shared breaker")
	// The outcome writer tells the observer of the change it recorded, a
	// moment after the call may have returned.
	rec1.waitFor(t, pgw.StateOpen)
	assert.Equal(t, []string{"solo:closed>open"}, rec1.Transitions())

	_, err = gw2.Chat(ctx, hello())
	require.ErrorAs(t, err, &coe, "the other gateway sees the breaker open")
	assert.Greater(t, coe.RetryAfter.Seconds(), 50.0)
	assert.Equal(t, 1, up.Requests(testutil.Chat), "the second gateway did not call the upstream")
	assert.Empty(t, rec2.Attempts())
	snap, err := gw2.Snapshot(ctx, "CHAT", "solo")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, snap.State)

	in := pgw.EmbedRequest{Inputs: []string{"x"}}
	_, err = gw1.Embed(ctx, in)
	require.NoError(t, err)
	_, err = gw2.Embed(ctx, in)
	require.NoError(t, err)
	_, err = gw1.Embed(ctx, in)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "RPM 2 is shared: the third request of the minute is refused")
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.Equal(t, 2, up.Requests(testutil.Embeddings))
}

func TestRedisClusterFromClusterAddrs(t *testing.T) {
	cluster := testutil.StartRedisCluster(t)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://ignored:6379/0", up)
	env["PGW_REDIS_CLUSTER_ADDRS"] = strings.Join(cluster.Addrs, ",")
	env["PGW_REDIS_DOWN"] = "fail_closed" // a wrong client would fail, not fall back
	gw, _ := newGateway(t, env)

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)
	_, err = gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
}

// deadRedisURL is a loopback address nothing listens on.
func deadRedisURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "redis://" + addr + "/0"
}

func TestRedisDownFailClosedFailsNew(t *testing.T) {
	up := testutil.NewUpstream(t)
	env := redisEnv(t, deadRedisURL(t), up)
	env["PGW_REDIS_DOWN"] = "fail_closed"
	s, err := config.FromMap(env)
	require.NoError(t, err)
	_, err = pgw.New(context.Background(), *s, pgw.WithLogger(testLogger(t)))
	require.ErrorIs(t, err, redis.ErrUnreachable)
	assert.Contains(t, err.Error(), "redis is unreachable")
}

func TestRedisDownFailOpenServesFromLocalGates(t *testing.T) {
	up := testutil.NewUpstream(t)
	env := redisEnv(t, deadRedisURL(t), up)
	gw, rec := newGateway(t, env)
	ctx := context.Background()

	resp, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)
	in := pgw.EmbedRequest{Inputs: []string{"x"}}
	for range 2 {
		_, err = gw.Embed(ctx, in)
		require.NoError(t, err)
	}
	_, err = gw.Embed(ctx, in)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "the local fallback still enforces RPM 2")
	assert.Equal(t, []string{"solo:success", "emb:success", "emb:success"}, rec.Outcomes())
}

func TestRedisFailOpenServesLocallyDuringAnOutageThenReturnsToRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, redisEnv(t, "redis://"+srv.Addr+"/0", up))
	ctx := context.Background()
	in := pgw.EmbedRequest{Inputs: []string{"x"}}

	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	srv.Stop()
	_, err = gw.Chat(ctx, hello())
	require.NoError(t, err, "breaker served locally")
	_, err = gw.Embed(ctx, in)
	require.NoError(t, err, "quota served locally")

	srv.Restart(t) // empty: no keys, no scripts
	backOnRedis := func() bool {
		_, chatErr := gw.Chat(ctx, hello())
		_, embedErr := gw.Embed(ctx, in)
		n, err := srv.Do("DBSIZE")
		return chatErr == nil && embedErr == nil && err == nil && n != "0"
	}
	// The gateway's prober sees Redis answer again within its backoff.
	assert.Eventually(t, backOnRedis, 5*time.Second, 100*time.Millisecond)
}
