package pgw_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// A wait the gateway's Close ends is reported as ended by the Close, not
// by the caller: WaitEnd.Err is pgw.ErrClosed and the "wait over" line
// says the gateway is closed, as the call itself returns ErrClosed and is
// counted closed.
func TestAWaitCloseEndsIsReportedClosedNotCanceled(t *testing.T) {
	up := testutil.NewUpstream(t)
	logs := &testutil.LogBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	waiting := make(chan struct{}, 1)
	ended := make(chan observe.WaitEnd, 1)
	results := make(chan string, 4)
	obs := observe.Funcs{
		WaitStart: func(observe.WaitStart) { waiting <- struct{}{} },
		WaitEnd:   func(e observe.WaitEnd) { ended <- e },
		Call:      func(e observe.CallResult) { results <- e.Result },
	}
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":                "CHAT",
		"CHAT__SOURCES":             "solo",
		"CHAT__SOLO__BASE_URL":      up.URL,
		"CHAT__SOLO__MAX_IN_FLIGHT": "1",
		"CHAT__STALL_WINDOW_S":      "600",
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(l), pgw.WithObserver(obs), fastBackoff)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	_, err = st.Recv() // the stream holds the only slot
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := gw.Chat(context.Background(), hello())
		done <- err
	}()
	<-waiting
	require.NoError(t, gw.Close())
	require.ErrorIs(t, <-done, pgw.ErrClosed)

	e := <-ended
	assert.ErrorIs(t, e.Err, pgw.ErrClosed)
	assert.NotErrorIs(t, e.Err, context.Canceled)
	assert.Contains(t, logs.String(), `msg="pgw: wait over"`)
	assert.Contains(t, logs.String(), `err="pgw: gateway client is closed"`)
	assert.NotContains(t, logs.String(), "context canceled")
	assert.Equal(t, pgw.ResultClosed, <-results)
}
