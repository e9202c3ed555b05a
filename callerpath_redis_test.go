package pgw_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// sourceTrips counts the round trips that touch one source's keys (its hash
// tag), split into the caller's path and the outcome writer's
// (admission.IsWrite); the prober's heartbeat, on its own key, is not one.
type sourceTrips struct {
	tag            string
	mu             sync.Mutex
	caller, writer int
	callerCmds     []string
}

func (h *sourceTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *sourceTrips) touches(cmds ...goredis.Cmder) bool {
	for _, c := range cmds {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, h.tag) {
				return true
			}
		}
	}
	return false
}

func (h *sourceTrips) book(ctx context.Context, cmds ...goredis.Cmder) {
	if !h.touches(cmds...) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if admission.IsWrite(ctx) {
		h.writer++
		return
	}
	h.caller++
	for _, c := range cmds {
		h.callerCmds = append(h.callerCmds, fmt.Sprint(c.Args()[0], " ", len(c.Args())))
	}
}

func (h *sourceTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.book(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (h *sourceTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.book(ctx, cmds...)
		return next(ctx, cmds)
	}
}

func (h *sourceTrips) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.caller, h.writer, h.callerCmds = 0, 0, nil
}

func (h *sourceTrips) callerTrips() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caller, append([]string(nil), h.callerCmds...)
}

// callGateway is a gateway on the Redis backends whose scope has one source
// with a rate, a token and an in-flight limit, and the client's round trips
// to that source's keys.
func callGateway(t *testing.T, scope string, c *goredis.Client, prefix string) *pgw.GatewayClient {
	t.Helper()
	s := pgw.Settings{
		BreakerBackend: config.BackendRedis,
		Redis:          config.RedisSettings{Prefix: prefix},
		Scopes: []pgw.ScopeSettings{{
			Name:      scope,
			QuotaFull: config.ModeFailFast,
			Sources: []pgw.Source{{
				Name: "up", BaseURL: "http://127.0.0.1:1", Timeout: 5 * time.Second,
				RPM: 1_000_000, TPM: 10_000_000, MaxInFlight: 64,
			}},
		}},
	}
	gw, err := pgw.New(context.Background(), s, pgw.WithRedisClient(c), pgw.WithLogger(testLogger(t)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })
	return gw
}

func answer(context.Context, pgw.Source) (string, pgw.Usage, error) {
	return "ok", pgw.Usage{TotalTokens: 3}, nil
}

// A pgw.Call on the Redis backends costs one round trip on the caller's
// path: the breaker, the quota and the advertised budget (which a Call's
// source, reporting no headers, is never known to lack) are asked in one
// script. The chat scope, which paces its sources, included.
func TestRedisCallIsOneRoundTripOnTheCallersPath(t *testing.T) {
	srv := testutil.StartRedis(t)
	for _, scope := range []string{"EMBEDDING", "CHAT"} {
		t.Run(scope, func(t *testing.T) {
			c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = c.Close() })
			trips := &sourceTrips{tag: "{" + strings.ToLower(scope) + ":up}"}
			c.AddHook(trips)
			gw := callGateway(t, scope, c, "pgw-rt-"+scope)
			ctx := t.Context()
			_, err := pgw.Call(ctx, gw, scope, answer) // scripts loaded, connections pooled
			require.NoError(t, err)
			trips.reset()
			const calls = 20
			for range calls {
				_, err := pgw.Call(ctx, gw, scope, answer)
				require.NoError(t, err)
			}
			n, cmds := trips.callerTrips()
			assert.Equal(t, calls, n, "caller's round trips: %v", cmds)
		})
	}
}

// The budget the fleet's other processes learned from their upstream's
// headers holds a pgw.Call back, although the Call's own answers advertise
// nothing: the take joined to the admission reads it.
func TestRedisCallObeysTheBudgetAnotherProcessRefreshed(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	const prefix = "pgw-fleet-budget"
	gw := callGateway(t, "EMBEDDING", c, prefix)
	ctx := t.Context()
	_, err := pgw.Call(ctx, gw, "EMBEDDING", answer)
	require.NoError(t, err)

	other, err := redis.NewBudget(c, "EMBEDDING", redis.WithPrefix(prefix))
	require.NoError(t, err)
	spent := gate.AdvertisedWindow{Limit: 100, Remaining: 0, Reset: time.Minute}
	require.NoError(t, other.Refresh(ctx, "up", gate.Advertised{Requests: spent, Tokens: gate.UnknownWindow}))

	ran := false
	_, err = pgw.Call(ctx, gw, "EMBEDDING", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		ran = true
		return answer(ctx, src)
	})
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.False(t, ran, "the spent budget held the call back")
}
