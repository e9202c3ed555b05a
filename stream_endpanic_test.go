package pgw_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// endPanicker records everything and follows each call's trace
// (ContextObserver); armed, it panics on the next attempt it hears has
// ended, as a buggy observer would.
type endPanicker struct {
	*recorder
	armed              atomic.Bool
	started, endedCall atomic.Int32
}

func (o *endPanicker) ObserveAttempt(a pgw.AttemptRecord) {
	if o.armed.CompareAndSwap(true, false) {
		panic("observer bug")
	}
	o.recorder.ObserveAttempt(a)
}

func (o *endPanicker) StartCall(ctx context.Context, _ observe.CallStart) context.Context {
	o.started.Add(1)
	return ctx
}
func (o *endPanicker) StartAttempt(ctx context.Context, _ observe.AttemptStart) context.Context {
	return ctx
}
func (o *endPanicker) EndAttempt(context.Context, observe.AttemptRecord) {}
func (o *endPanicker) EndWait(context.Context, observe.WaitEnd)          {}
func (o *endPanicker) EndCall(context.Context, observe.CallResult)       { o.endedCall.Add(1) }

// eofItems sends its items, then io.EOF.
type eofItems struct{ items []string }

func (s *eofItems) Recv() (string, error) {
	if len(s.items) == 0 {
		return "", io.EOF
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it, nil
}
func (s *eofItems) Close() error { return nil }

// A stream whose observer panics as the stream's end at io.EOF is reported
// still ends its call: the call's result is reported (as an error: the
// attempt's report panicked) and its trace ended before the panic reaches
// the caller of Recv, and the stream's slot is free for the next call.
// Before, the call's CallResult and EndCall were lost, and the call stayed
// open until the gateway's Close.
func TestAStreamWhoseObserverPanicsAtItsEndStillEndsItsCall(t *testing.T) {
	for _, kind := range []string{"chat", "items"} {
		t.Run(kind, func(t *testing.T) {
			obs := &endPanicker{recorder: newRecorder()}
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "CHAT",
				"CHAT__SOURCES":          "a",
				"CHAT__A__MAX_IN_FLIGHT": "1",
				"CHAT__QUOTA_FULL":       "fail_fast",
			}, pgw.WithChatTransport(&ctxChat{eof: true}), pgw.WithObserver(obs))
			ctx := context.Background()
			run := func() error {
				var recv func() error
				if kind == "chat" {
					st, err := gw.ChatStream(ctx, hello())
					if err != nil {
						return err
					}
					recv = func() error { _, err := st.Recv(); return err }
				} else {
					st, err := pgw.CallStream(ctx, gw, "CHAT", func(context.Context, pgw.Source) (pgw.Streamer[string], error) {
						return &eofItems{items: []string{"x"}}, nil
					})
					if err != nil {
						return err
					}
					recv = func() error { _, err := st.Recv(); return err }
				}
				for {
					if err := recv(); err == io.EOF {
						return nil
					} else if err != nil {
						return err
					}
				}
			}
			obs.armed.Store(true)
			assert.PanicsWithValue(t, "observer bug", func() { _ = run() })
			assert.Equal(t, []string{pgw.ResultError}, obs.Results(), "the call's result is reported")
			assert.Equal(t, int32(1), obs.started.Load())
			assert.Equal(t, int32(1), obs.endedCall.Load(), "the call's trace is ended")

			require.NoError(t, run(), "the slot the panicking stream held is free again")
			assert.Equal(t, []string{pgw.ResultError, pgw.ResultSuccess}, obs.Results())
			assert.Equal(t, obs.started.Load(), obs.endedCall.Load(), "every call's trace is ended")
		})
	}
}
