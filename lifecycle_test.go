package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// ctxGateways are the two ways a call's ctx is built: under an observer
// (which may wrap it) and with none.
func ctxGateways(t *testing.T, env map[string]string) map[string]*pgw.GatewayClient {
	t.Helper()
	observed, _ := newGateway(t, env)
	s, err := config.FromMap(env)
	require.NoError(t, err)
	bare, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Close() })
	return map[string]*pgw.GatewayClient{"observed": observed, "unobserved": bare}
}

var runEnv = map[string]string{
	"PGW_SCOPES":            "RUN",
	"RUN__SOURCES":          "a",
	"RUN__A__RPM":           "1000",
	"RUN__MAX_ATTEMPTS":     "1",
	"RUN__A__TIMEOUT_S":     "600",
	"RUN__A__BASE_URL":      "http://127.0.0.1:1",
	"RUN__QUOTA_FULL":       "fail_fast",
	"RUN__CIRCUIT_OPEN":     "fail_fast",
	"RUN__A__MAX_IN_FLIGHT": "1",
}

// blockedAttempt runs one call whose attempt waits for its ctx to end and
// reports what the ctx said.
type blockedAttempt struct {
	started chan struct{}
	err     chan error // the call's
	ctxErr  error
	cause   error
}

func startBlocked(ctx context.Context, gw *pgw.GatewayClient) *blockedAttempt {
	b := &blockedAttempt{started: make(chan struct{}), err: make(chan error, 1)}
	go func() {
		_, err := pgw.Call(ctx, gw, "RUN", func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
			close(b.started)
			<-ctx.Done()
			b.ctxErr, b.cause = ctx.Err(), context.Cause(ctx)
			return 0, pgw.Usage{}, ctx.Err()
		})
		b.err <- err
	}()
	return b
}

func TestCloseEndsARunningAttemptsCtxWithCauseErrClosed(t *testing.T) {
	for name, gw := range ctxGateways(t, runEnv) {
		t.Run(name, func(t *testing.T) {
			b := startBlocked(context.Background(), gw)
			<-b.started
			require.NoError(t, gw.Close())
			assert.ErrorIs(t, <-b.err, pgw.ErrClosed)
			assert.Equal(t, context.Canceled, b.ctxErr)
			assert.ErrorIs(t, b.cause, pgw.ErrClosed)
		})
	}
}

func TestTheCallersCancelCauseReachesTheAttempt(t *testing.T) {
	errMine := errors.New("the caller gave up")
	for name, gw := range ctxGateways(t, runEnv) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			b := startBlocked(ctx, gw)
			<-b.started
			cancel(errMine)
			assert.ErrorIs(t, <-b.err, context.Canceled)
			assert.Equal(t, context.Canceled, b.ctxErr)
			assert.Equal(t, errMine, b.cause)

			// The permit came back: MAX_IN_FLIGHT=1 admits the next call.
			_, err := pgw.Call(context.Background(), gw, "RUN", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
				return 1, pgw.Usage{}, nil
			})
			assert.NoError(t, err)
		})
	}
}

func TestTheSourceTimeoutEndsTheAttemptWithDeadlineExceeded(t *testing.T) {
	env := map[string]string{}
	for k, v := range runEnv {
		env[k] = v
	}
	env["RUN__A__TIMEOUT_S"] = "0.01"
	for name, gw := range ctxGateways(t, env) {
		t.Run(name, func(t *testing.T) {
			b := startBlocked(context.Background(), gw)
			<-b.started
			err := <-b.err
			assert.Error(t, err)
			assert.Equal(t, context.DeadlineExceeded, b.ctxErr)
			assert.Equal(t, context.DeadlineExceeded, b.cause)
		})
	}
}

func TestAPanickingAttemptGivesBackItsPermit(t *testing.T) {
	for name, gw := range ctxGateways(t, runEnv) {
		t.Run(name, func(t *testing.T) {
			func() {
				defer func() { assert.Equal(t, "boom", recover()) }()
				_, _ = pgw.Call(context.Background(), gw, "RUN", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
					panic("boom")
				})
			}()
			_, err := pgw.Call(context.Background(), gw, "RUN", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
				return 1, pgw.Usage{}, nil
			})
			assert.NoError(t, err, "MAX_IN_FLIGHT=1: the panicked attempt's permit is back")
			assert.NoError(t, gw.Close(), "Close does not wait for the panicked call")
		})
	}
}

func TestAGovernedCallAllocatesOnlyItselfAndItsAttempt(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties sync.Pools at random: allocation counts do not hold")
	}
	gw := benchGateway(t)
	ctx := context.Background()
	call := func() {
		if _, err := pgw.Call(ctx, gw, "BENCH", noopAttempt); err != nil {
			t.Fatal(err)
		}
	}
	call()
	// One allocation for the call (its ctx, its place among the live calls)
	// and its first attempt (ctx, hold, response sink).
	assert.LessOrEqual(t, testing.AllocsPerRun(200, call), 1.0)
}

// The room for a call's first attempt serves it alone: a second attempt has
// a ctx of its own, and the first's stays ended.
func TestACallsSecondAttemptHasAContextOfItsOwn(t *testing.T) {
	gw := benchGateway(t)
	var ctxs []context.Context
	n, err := pgw.Call(context.Background(), gw, "BENCH", func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
		ctxs = append(ctxs, ctx)
		if len(ctxs) == 1 {
			return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusServiceUnavailable, Message: "try again"}
		}
		require.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the first attempt's ctx stays ended: the second's is its own")
		require.NoError(t, ctx.Err(), "the second attempt's ctx is live")
		return 7, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	require.Len(t, ctxs, 2)
	assert.NotSame(t, ctxs[0], ctxs[1])
	assert.ErrorIs(t, ctxs[0].Err(), context.Canceled)
	assert.ErrorIs(t, ctxs[1].Err(), context.Canceled)
}
