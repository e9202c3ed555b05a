package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// A call that the gateway's Close interrupted is Close's, even when its
// caller cancels afterwards, before the call has returned: the caller gets
// ErrClosed, as its attempt and its CallResult say — never a "closed" report
// for a call that returned context.Canceled.
func TestCallClosedThenCanceledReturnsWhatItsReportSays(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":   "RUN",
		"RUN__SOURCES": "r",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw, "RUN", func(actx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
			close(started)
			<-actx.Done() // Close ends the attempt first
			cancel()      // then the caller gives up, before the call returns
			return 0, pgw.Usage{}, actx.Err()
		})
		done <- err
	}()
	<-started
	require.NoError(t, gw.Close())
	err := <-done

	require.Len(t, rec.Calls(), 1)
	res := rec.Calls()[0]
	require.Equal(t, pgw.ResultClosed, res.Result, "Close ended the call first")
	assert.ErrorIs(t, res.Err, pgw.ErrClosed)
	assert.ErrorIs(t, err, pgw.ErrClosed, "the caller gets the error its CallResult reports")
	require.Len(t, rec.Attempts(), 1)
	assert.Equal(t, pgw.OutcomeClosed, rec.Attempts()[0].Outcome)
}

// closingOnRejection is an observer that, once armed, answers the call's
// first rejection by starting the gateway's Close and waiting until it has
// ended the call's ctx: Close lands after the admission decided, before the
// call's result is reported.
type closingOnRejection struct {
	observe.Funcs
	gw    *pgw.GatewayClient
	armed bool
	ctx   context.Context
	calls []pgw.CallResult
}

func newClosingOnRejection() *closingOnRejection {
	o := &closingOnRejection{}
	o.Call = func(c pgw.CallResult) { o.calls = append(o.calls, c) }
	o.Rejection = func(pgw.Rejection) {
		if o.armed {
			o.armed = false
			go func() { _ = o.gw.Close() }()
			<-o.ctx.Done()
		}
	}
	return o
}

func (o *closingOnRejection) StartCall(ctx context.Context, _ observe.CallStart) context.Context {
	o.ctx = ctx
	return ctx
}
func (o *closingOnRejection) StartAttempt(ctx context.Context, _ pgw.AttemptStart) context.Context {
	return ctx
}
func (o *closingOnRejection) EndAttempt(context.Context, pgw.AttemptRecord) {}
func (o *closingOnRejection) EndWait(context.Context, pgw.WaitEnd)          {}
func (o *closingOnRejection) EndCall(context.Context, pgw.CallResult)       {}

// A call refused by its admission just as Close interrupts it returns
// ErrClosed, and its CallResult says closed too — not quota_exhausted for a
// call whose caller got ErrClosed.
func TestCallRefusedAsCloseInterruptsItIsReportedClosed(t *testing.T) {
	obs := newClosingOnRejection()
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES":    "a",
		"CHAT__A__RPM":     "1",
		"CHAT__QUOTA_FULL": "fail_fast",
	}, pgw.WithChatTransport(&ctxChat{eof: true}), pgw.WithObserver(obs))
	obs.gw = gw
	_, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err, "the minute's one request")
	obs.armed = true
	_, err = gw.Chat(context.Background(), hello())
	require.ErrorIs(t, err, pgw.ErrClosed)
	require.Len(t, obs.calls, 2)
	assert.Equal(t, pgw.ResultClosed, obs.calls[1].Result, "the caller got ErrClosed")
	assert.ErrorIs(t, obs.calls[1].Err, pgw.ErrClosed)
}
