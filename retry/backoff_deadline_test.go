package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// A backoff that fits before the caller's deadline is slept as drawn; the
// first one that would end at or after it is not slept: the call ends at
// once with *GatewayUnavailableError wrapping the last attempt's error.
// Here the draws are half of 1 s, 2 s, 4 s, 8 s against a deadline 3 s
// away: the 0.5 s, 1 s and 2 s backoffs are slept (on the fake sleeper,
// which takes no wall time), the 4 s one is not.
func TestABackoffPastTheDeadlineEndsTheCallWithTheLastError(t *testing.T) {
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Rand = func() float64 { return 0.5 }
		c.Breaker = gate.Noop{}
		c.Backoff = retry.Backoff{Base: time.Second, Max: time.Minute}
		c.Scope.MaxAttempts = 10
	})
	last := httpErr(503, 0, "overloaded #4")
	s := &script{errs: map[string][]error{"only": {errBoom, errBoom, errBoom, last, errBoom}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := retry.Run(ctx, e.loop, 1, s.attempt)
	require.NoError(t, ctx.Err())
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	var gu *errs.GatewayUnavailableError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, 4, gu.Attempts)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he, "the last attempt's error is reachable")
	assert.Equal(t, "overloaded #4", he.Message)
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}, e.sleeper.taken())
	assert.Len(t, s.seen(), 4)
	e.requireNothingHeld(t, "only")
}

// Without a deadline, or with a ctx already done, nothing changes: the
// backoff is slept in full, and a done ctx returns its own error.
func TestABackoffWithoutADeadlineIsSleptInFull(t *testing.T) {
	e := newEnv(t, names("only"), func(c *retry.Config) {
		c.Rand = func() float64 { return 0.5 }
		c.Breaker = gate.Noop{}
		c.Backoff = retry.Backoff{Base: time.Hour, Max: time.Hour}
		c.Scope.MaxAttempts = 2
		c.Scope.StallWindow = 2 * time.Hour
	})
	s := &script{errs: map[string][]error{"only": {errBoom}}}
	v, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@only", v)
	assert.Equal(t, []time.Duration{30 * time.Minute}, e.sleeper.taken())

	ctx, cancel := context.WithCancel(context.Background())
	s = &script{errs: map[string][]error{"only": {errBoom}}}
	_, err = retry.Run(ctx, e.loop, 1, func(actx context.Context, src config.Source) (string, transport.Usage, error) {
		defer cancel()
		return s.attempt(actx, src)
	})
	assert.ErrorIs(t, err, context.Canceled, "a cancelled call returns ctx.Err()")
}
