package pgw_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// redisPair is two gateways — two processes of one service — sharing one
// real redis-server, with env on top of the Redis backend keys.
func redisPair(t *testing.T, srv *testutil.RedisServer, env map[string]string) (*pgw.GatewayClient, *pgw.GatewayClient) {
	t.Helper()
	env = onRedis(t, srv, env)
	gw1, _ := newGateway(t, env)
	gw2, _ := newGateway(t, env)
	return gw1, gw2
}

// admittedSoon asks again until call is admitted, for up to 5 s: another
// process sees a give-back once the outcome writer has written it, a moment
// after the call returned. Each refusal in between must be by the quota
// (fail_fast, which consumes nothing); 5 s refills too little of any of the
// limits below to stand in for the give-back.
func admittedSoon(t *testing.T, msg string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase, msg)
		require.True(t, time.Now().Before(deadline), "%s: still refused after 5 s: %v", msg, err)
		time.Sleep(5 * time.Millisecond)
	}
}

// The RPM bucket is the fleet's: whichever gateway sends them, the minute's
// requests are admitted and the next is refused with the refill wait on the
// server's clock.
func TestRedisRPMIsOneBucketForTheFleetWithItsRefillWait(t *testing.T) {
	srv := testutil.StartRedis(t)
	gw1, gw2 := redisPair(t, srv, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__RPM": "5", "GEN__QUOTA_FULL": "fail_fast",
	})
	ctx := context.Background()
	fn := func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil }
	for i, gw := range []*pgw.GatewayClient{gw1, gw2, gw1, gw2, gw1} {
		_, err := pgw.Call(ctx, gw, "GEN", fn)
		require.NoError(t, err, "call %d of the minute's 5", i)
	}
	for _, gw := range []*pgw.GatewayClient{gw1, gw2} {
		_, err := pgw.Call(ctx, gw, "GEN", fn)
		within(t, refusedByQuota(t, err, "the fleet's 6th call of the minute"), 12*time.Second, 5*time.Second,
			"one request refills in 60 s / 5")
	}
}

// A settlement made by one gateway is seen by the other: the refund of an
// estimate larger than the usage makes room for the other's call, and the
// usage charged is what the other is then refused for.
func TestRedisTokenSettlementIsSeenByTheWholeFleet(t *testing.T) {
	srv := testutil.StartRedis(t)
	u := newScriptedUpstream(t)
	gw1, gw2 := redisPair(t, srv, soloChat(u.URL, "CHAT__SOLO__TPM", "1000"))
	ctx := context.Background()

	u.script(scripted{status: 200, tokens: 100})
	_, err := gw1.Chat(ctx, estimated(600))
	require.NoError(t, err)
	u.script(scripted{status: 200, tokens: 900})
	admittedSoon(t, "gateway 1's refund makes room for gateway 2's 900", func() error {
		_, err := gw2.Chat(ctx, estimated(900))
		return err
	})
	_, err = gw1.Chat(ctx, estimated(300))
	within(t, refusedByQuota(t, err, "the fleet used the minute's 1000 tokens"), 18*time.Second, 5*time.Second,
		"300 tokens refill in 18 s")
	assert.Equal(t, int64(2), u.hits.Load())
}

// On Redis too, a failed attempt is charged no tokens: every attempt of a
// call reserving the whole minute's TPM is admitted, and so is the other
// gateway's call after it.
func TestRedisFailedAttemptsAreRefundedForTheFleet(t *testing.T) {
	srv := testutil.StartRedis(t)
	u := newScriptedUpstream(t)
	gw1, gw2 := redisPair(t, srv, soloChat(u.URL, "CHAT__SOLO__TPM", "1000", "CHAT__MAX_ATTEMPTS", "3"))
	u.script(scripted{status: http.StatusInternalServerError}, scripted{status: http.StatusTooManyRequests},
		scripted{status: http.StatusInternalServerError})
	_, err := gw1.Chat(context.Background(), estimated(1000))
	var gue *pgw.GatewayUnavailableError
	require.ErrorAs(t, err, &gue, "three failed attempts, each admitted")
	assert.Equal(t, int64(3), u.hits.Load())
	admittedSoon(t, "nothing was charged for the failed attempts", func() error {
		_, err := gw2.Chat(context.Background(), estimated(1000))
		return err
	})
}

// MAX_IN_FLIGHT counts the fleet's attempts: a slot held by one gateway
// refuses the other's call with no certain wait, and is the other's once
// the call holding it returns.
func TestRedisInFlightSlotsAreTheFleets(t *testing.T) {
	srv := testutil.StartRedis(t)
	gw1, gw2 := redisPair(t, srv, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__MAX_IN_FLIGHT": "1", "GEN__QUOTA_FULL": "fail_fast",
	})
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw1, "GEN", func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done(): // Close, should the test fail first
			}
			return 1, pgw.Usage{}, nil
		})
		done <- err
	}()
	<-entered
	quick := func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil }
	_, err := pgw.Call(ctx, gw2, "GEN", quick)
	assert.Equal(t, time.Duration(0), refusedByQuota(t, err, "gateway 1 holds the one slot"))
	close(release)
	require.NoError(t, <-done)
	admittedSoon(t, "the slot comes back to the fleet", func() error {
		_, err := pgw.Call(ctx, gw2, "GEN", quick)
		return err
	})
}

// On Redis a call's settlement is written by the outcome writer after the
// call returned; a caller calling again at once must still find the tokens
// its finished call gave back, as it finds its slot: were it refused, it
// would be told to wait for the refill of an estimate already refunded (48 s
// here), and under QUOTA_FULL=wait it would sleep that long.
func TestRedisOwnNextCallFindsTheTokensItsLastCallGaveBack(t *testing.T) {
	srv := testutil.StartRedis(t)
	u := newScriptedUpstream(t)
	gw, _ := newGateway(t, onRedis(t, srv, soloChat(u.URL, "CHAT__SOLO__TPM", "1000")))
	ctx := context.Background()
	for i := range 30 {
		u.script(scripted{status: 200, tokens: 1})
		_, err := gw.Chat(ctx, estimated(900))
		require.NoError(t, err, "call %d: 900 reserved, 1 used by each call before it", i)
	}
	u.script(scripted{status: http.StatusInternalServerError})
	_, err := gw.Chat(ctx, estimated(900))
	require.NoError(t, err, "the failed attempt's 900 came back before its retry asked")
}
