package pgw_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// callOnOpen starts a call on the gateway when a breaker opens: an observer
// that re-enters the gateway from the callback.
type callOnOpen struct {
	observe.Nop
	gw   atomic.Pointer[pgw.GatewayClient]
	errs chan error
}

func (o *callOnOpen) ObserveStateChange(e observe.StateChange) {
	if e.To != gate.Open {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := o.gw.Load().Chat(ctx, hello())
	o.errs <- err
}

// With Redis, the state change an outcome causes is observed on the outcome
// writer's goroutine. An observer that starts a call from there must not wait
// for that very outcome to be written: the call's admission asks about the
// source once the breaker has heard it, which it has.
func TestObserverStartingACallOnTheWriterDoesNotDeadlock(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	env := redisEnv(t, "redis://"+srv.Addr+"/0", up)
	env["CHAT__MAX_ATTEMPTS"] = "1"
	s, err := config.FromMap(env)
	require.NoError(t, err)
	obs := &callOnOpen{errs: make(chan error, 4)}
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(testLogger(t)), pgw.WithObserver(obs), fastBackoff)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })
	obs.gw.Store(gw)

	_, err = gw.Chat(context.Background(), hello())
	require.Error(t, err)
	err = <-obs.errs
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe, "the observer's call sees the open breaker, not its own deadline")
}
