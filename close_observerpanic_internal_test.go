package pgw

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// heldChat's streams send one chunk, then wait for their ctx or their Close.
type heldChat struct{}

func (heldChat) ChatStream(ctx context.Context, _ Source, _ ChatRequest) (ChatStream, error) {
	return &heldStream{ctx: ctx, closed: make(chan struct{})}, nil
}

type heldStream struct {
	ctx    context.Context
	sent   bool
	once   sync.Once
	closed chan struct{}
}

func (s *heldStream) Recv() (ChatChunk, error) {
	if !s.sent {
		s.sent = true
		return ChatChunk{Delta: "hi"}, nil
	}
	select {
	case <-s.ctx.Done():
		return ChatChunk{}, s.ctx.Err()
	case <-s.closed:
		return ChatChunk{}, errors.New("stream closed")
	}
}

func (s *heldStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// closePanicker panics on every attempt end it hears of.
type closePanicker struct{ observe.Nop }

func (closePanicker) ObserveAttempt(observe.AttemptRecord) { panic("observer bug") }

// syncBuffer is a log's output a test reads while the gateway writes it.
type syncBuffer = testutil.LogBuffer

// TestCloseReleasesEverythingWhenAnObserverPanicsOnAStreamItCloses: Close
// closes the open streams itself when their ctx's hook has not (here: the
// hooks are disarmed, as in the moment between a stream's registration and
// its hook's), and an observer that panics on each stream's end does not
// cut Close short: every stream is closed and its admission given back,
// every call ends, and only then does the first panic go on to Close's
// caller; the second is logged. A later Close returns at once. Before,
// the first panic left the other stream open, the calls unwaited and the
// gateway's resources unreleased, and a later Close did nothing.
func TestCloseReleasesEverythingWhenAnObserverPanicsOnAStreamItCloses(t *testing.T) {
	s, err := config.FromMap(map[string]string{"CHAT__SOURCES": "a"})
	require.NoError(t, err)
	var logs syncBuffer
	g, err := New(context.Background(), *s, WithChatTransport(heldChat{}), WithObserver(closePanicker{}),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	var streams []*Stream
	for range 2 {
		st, err := g.ChatStream(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		st.guard.end()
		streams = append(streams, st)
	}

	assert.PanicsWithValue(t, "observer bug", func() { _ = g.Close() })
	for i, st := range streams {
		assert.True(t, st.st.Finished(), "stream %d was left open", i)
	}
	adm, err := g.Admission("CHAT")
	require.NoError(t, err)
	assert.Zero(t, adm.Latency().InFlight("a"), "an admission is still held")
	g.liveMu.Lock()
	assert.Nil(t, g.live, "a call is still registered")
	g.liveMu.Unlock()
	assert.Equal(t, 1, strings.Count(logs.String(), "an observer panicked"), "the second panic is logged once:\n%s", logs.String())
	assert.NotPanics(t, func() { assert.NoError(t, g.Close()) }, "a later Close returns the first one's result")
}
