package pgw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A black-holed Redis answers nothing, so each gate operation would only
// end at its caller's deadline. The gateway's prober sees the outage within
// two probe intervals; after that no call waits for Redis: fail_open serves
// from local gates, fail_closed fails at once with ErrUnreachable, and both
// are back on Redis once it answers.
func TestRedisBlackholeNobodyWaitsForItsDeadline(t *testing.T) {
	for _, mode := range []string{"fail_open", "fail_closed"} {
		t.Run(mode, func(t *testing.T) {
			srv := testutil.StartRedis(t)
			px := testutil.StartProxy(t, srv.Addr)
			up := testutil.NewUpstream(t)
			env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
			env["PGW_REDIS_DOWN"] = mode
			env["EMBEDDING__EMB__RPM"] = "1000"
			gw, _ := newGateway(t, env)
			in := pgw.EmbedRequest{Inputs: []string{"x"}}

			_, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)

			px.SetMode(testutil.ProxyBlackhole)
			// The prober's outage starts within two intervals (1 s by
			// default); four are given.
			time.Sleep(4 * redis.DefaultProbeInterval)
			for range 10 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, chatErr := gw.Chat(ctx, hello())
				_, embErr := gw.Embed(ctx, in)
				assert.NoError(t, ctx.Err(), "no call waits for its deadline during the outage")
				cancel()
				if mode == "fail_open" {
					require.NoError(t, chatErr, "served by the local breaker")
					require.NoError(t, embErr, "served by the local quota")
					continue
				}
				require.ErrorIs(t, chatErr, redis.ErrUnreachable)
				require.ErrorIs(t, embErr, redis.ErrUnreachable)
			}

			embKeys := func() string {
				out, err := srv.Do("EVAL", "return #redis.call('KEYS', ARGV[1])", "0", env["PGW_REDIS_PREFIX"]+":{embedding:emb}*")
				require.NoError(t, err)
				return strings.TrimSpace(out)
			}
			require.Equal(t, "0", embKeys(), "the embedding scope never reached redis so far")

			px.SetMode(testutil.ProxyForward)
			assert.Eventually(t, func() bool {
				_, err := gw.Chat(context.Background(), hello())
				return err == nil
			}, 10*time.Second, 50*time.Millisecond)
			// Back on Redis: the embedding quota's keys appear there.
			assert.Eventually(t, func() bool {
				_, err := gw.Embed(context.Background(), in)
				return err == nil && embKeys() != "0"
			}, 10*time.Second, 50*time.Millisecond)
		})
	}
}
