package pgw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A Redis that accepts connections but never answers does not answer
// within New's ctx: under fail_closed New fails with an error matching
// redis.ErrUnreachable, as for a Redis that refuses connections, and
// returns at ctx's deadline; under fail_open it starts on local gates.
func TestRedisBlackholedAtStart(t *testing.T) {
	for _, mode := range []string{"fail_closed", "fail_open"} {
		t.Run(mode, func(t *testing.T) {
			srv := testutil.StartRedis(t)
			px := testutil.StartProxy(t, srv.Addr)
			px.SetMode(testutil.ProxyBlackhole)
			up := testutil.NewUpstream(t)
			env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
			env["PGW_REDIS_DOWN"] = mode
			s, err := config.FromMap(env)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			gw, err := pgw.New(ctx, *s, pgw.WithLogger(testLogger(t)))
			assert.Less(t, time.Since(start), 3*time.Second, "New returns about at its ctx's deadline")
			if mode == "fail_closed" {
				require.ErrorIs(t, err, redis.ErrUnreachable)
				assert.Contains(t, err.Error(), "redis is unreachable")
				return
			}
			require.NoError(t, err)
			require.NoError(t, gw.Close())
		})
	}
}
