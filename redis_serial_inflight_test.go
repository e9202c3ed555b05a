package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// A caller that calls again as soon as its call returned is never refused
// its own finished call's in-flight slot, though the outcome that frees it
// is written to Redis off the caller's path: with MAX_IN_FLIGHT 1 and
// QUOTA_FULL fail_fast, every serial call is admitted.
func TestRedisSerialCallsOfAOneSlotSourceAreAllAdmitted(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+srv.Addr+"/0", up)
	env["CHAT__SOLO__MAX_IN_FLIGHT"] = "1"
	env["CHAT__QUOTA_FULL"] = "fail_fast"
	gw, _ := newGateway(t, env)
	for i := range 100 {
		_, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err, "call %d", i)
	}
}
