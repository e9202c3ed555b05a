package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// giveUpHook lets the next script run on the server, then reports the
// caller's ctx as ended, as when the caller gives up while the reply is on
// the way; it signals each script that follows once it has run (not one
// the server answered NOSCRIPT, which is sent again whole).
type giveUpHook struct {
	cancel context.CancelFunc
	armed  chan struct{} // one token: the next script is given up on
	ran    chan string   // the scripts after it, once they ran
}

func (h *giveUpHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *giveUpHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		name := strings.ToLower(cmd.Name())
		if name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		select {
		case <-h.armed:
			err := next(context.WithoutCancel(ctx), cmd)
			if err != nil {
				// Not run (a NOSCRIPT answered before a load): the
				// script that follows is the one given up on.
				h.armed <- struct{}{}
				return err
			}
			h.cancel()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		default:
		}
		err := next(ctx, cmd)
		if err != nil {
			// Not run either (a NOSCRIPT before the script is sent whole):
			// the same release follows.
			return err
		}
		select {
		case h.ran <- cmd.String():
		default:
		}
		return nil
	}
}

func (h *giveUpHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// A caller that gives up while its admission's reply is on the way leaves
// no in-flight lease behind: with MAX_IN_FLIGHT=1 the next call is admitted
// once the lease the lost reply carried is released, not only when it
// expires minutes later.
func TestAGivenUpRoundTripLeavesNoInFlightLease(t *testing.T) {
	srv := testutil.StartRedis(t)
	for _, combined := range []bool{false, true} {
		t.Run(map[bool]string{false: "acquire", true: "admit"}[combined], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &giveUpHook{cancel: cancel, armed: make(chan struct{}, 1), ran: make(chan string, 16)}
			c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = c.Close() })
			c.AddHook(h)
			scope := uniqueScope()
			q, err := redis.NewQuota(c, scope, map[string]gate.Limits{"s1": {MaxInFlight: 1}})
			require.NoError(t, err)
			b, err := redis.NewBreaker(c, scope, gate.Policy{ConsecutiveFailures: 1})
			require.NoError(t, err)
			h.armed <- struct{}{}
			if combined {
				_, _, _, ok, err := q.Admit(ctx, b, "s1", 1)
				require.True(t, ok)
				require.ErrorIs(t, err, context.Canceled)
			} else {
				_, _, err := q.Acquire(ctx, "s1", 1)
				require.ErrorIs(t, err, context.Canceled)
			}
			// The release of the lease the lost reply carried; an
			// admission's also frees the probe lease it may have carried
			// (a script of its own, in either order).
			for range map[bool]int{false: 1, true: 2}[combined] {
				select {
				case <-h.ran:
				case <-time.After(10 * time.Second): // a bound on a hang, not a timing
					t.Fatal("the lease the lost reply carried was never released")
				}
			}
			p, qd, err := q.Acquire(context.Background(), "s1", 1)
			require.NoError(t, err)
			assert.True(t, qd.Allowed, "the slot is free: %+v", qd)
			require.NoError(t, q.Release(context.Background(), p))
		})
	}
}
