package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
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
