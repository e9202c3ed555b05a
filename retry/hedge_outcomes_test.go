package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// A hedged call its caller cancels cuts its hedge too: the hedge is
// reported canceled — neither won nor wasted on a faster answer — and a
// stream the hedge opened after the race ended (its upstream ignored the
// cancellation) is closed unread and reported canceled, not as a lost
// hedge: no attempt of the call delivered first.
func TestHedgeACanceledRaceReportsItsLateStreamAndItsHedgeCanceled(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	tr.deaf["s2"] = true
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := openHedged(ctx, chat)
	require.Equal(t, "s1", <-tr.opened)
	e.clk.Advance(time.Second)
	e.timer.fire(t)
	require.Equal(t, "s2", <-tr.opened)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	tr.release("s2") // its first chunk comes after the call ended
	e.loop.WaitHedges()
	e.requireGivenBack(t)

	assert.True(t, tr.stream("s2").closed.Load(), "the late stream is closed")
	assert.Zero(t, tr.stream("s2").sent.Load()-1, "read up to its first chunk, no further")
	assert.Equal(t, map[string]string{"s1": observe.OutcomeCanceled, "s2": observe.OutcomeCanceled}, e.outcomes())
	assert.Equal(t, []string{"fired:s2<s1", "canceled:s2<s1"}, e.hedgeEvents())
}

// A hedge whose own attempt the caller's cancellation ended first is
// canceled too, not left without an end.
func TestHedgeACanceledHedgeAttemptIsReportedCanceled(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	tr.deaf["s1"] = true
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := openHedged(ctx, chat)
	require.Equal(t, "s1", <-tr.opened)
	e.timer.fire(t)
	require.Equal(t, "s2", <-tr.opened)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	tr.release("s1")
	e.loop.WaitHedges()
	e.requireGivenBack(t)
	assert.Equal(t, map[string]string{"s1": observe.OutcomeCanceled, "s2": observe.OutcomeCanceled}, e.outcomes())
	assert.Equal(t, []string{"fired:s2<s1", "canceled:s2<s1"}, e.hedgeEvents())
}

// An attempt that panics in a race ends the call with its panic: the
// attempt it raced is cut and reported abandoned, as the call was — not as
// lost to an attempt that delivered — and the hedge is canceled.
func TestHedgeAPanicInARaceAbandonsTheOtherAttempt(t *testing.T) {
	e := newHedgeEnv(t, nil)
	started := make(chan struct{})
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = retry.Run(context.Background(), e.loop, 0, func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
			if src.Name == "s2" {
				panic("caller bug")
			}
			close(started)
			<-ctx.Done()
			return "", transport.Usage{}, ctx.Err()
		})
	}()
	<-started
	e.timer.fire(t)
	assert.Equal(t, "caller bug", <-panicked)
	e.loop.WaitHedges()
	e.requireGivenBack(t)
	assert.Equal(t, map[string]string{"s1": observe.OutcomeAbandoned, "s2": observe.OutcomePanic}, e.outcomes())
	assert.Equal(t, []string{"fired:s2<s1", "canceled:s2<s1"}, e.hedgeEvents())
}

// A race that the primary's caller error (a 400) ends has no winner: the
// hedge it cut — a stream the hedge opened after the race ended too,
// closed unread — is reported canceled, as its hedge event is, not as lost
// to an attempt that delivered or wasted on one.
func TestHedgeACallerErrorCancelsTheOtherAttempt(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	tr.fail["s1"] = httpErr(400, 0, "bad request")
	tr.deaf["s2"] = true
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	done := openHedged(context.Background(), chat)
	require.Equal(t, "s1", <-tr.opened)
	e.timer.fire(t)
	require.Equal(t, "s2", <-tr.opened)
	tr.release("s1") // the caller error
	var he *errs.HTTPError
	require.ErrorAs(t, <-done, &he)
	tr.release("s2") // its first chunk comes after the call ended
	e.loop.WaitHedges()
	e.requireGivenBack(t)

	assert.True(t, tr.stream("s2").closed.Load(), "the late stream is closed")
	assert.Equal(t, map[string]string{"s1": observe.OutcomeCallerError, "s2": observe.OutcomeCanceled}, e.outcomes())
	assert.Equal(t, []string{"fired:s2<s1", "canceled:s2<s1"}, e.hedgeEvents())
}
