package pgw_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// bufferedChat is a chat transport whose streams hold their whole answer
// already read, as a transport reading through a buffer does once the
// upstream sent it: Close does not empty that buffer, so a Recv after it
// still returns what was read, then io.EOF.
type bufferedChat struct{ closes atomic.Int32 }

func (c *bufferedChat) ChatStream(context.Context, pgw.Source, pgw.ChatRequest) (pgw.ChatStream, error) {
	stop := "stop"
	return &bufferedChatStream{c: c, chunks: []pgw.ChatChunk{
		{Delta: "Hello"}, {Delta: " there"}, {FinishReason: stop},
		{Usage: &pgw.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4}},
	}}, nil
}

type bufferedChatStream struct {
	c      *bufferedChat
	chunks []pgw.ChatChunk
}

func (s *bufferedChatStream) Recv() (pgw.ChatChunk, error) {
	if len(s.chunks) == 0 {
		return pgw.ChatChunk{}, io.EOF
	}
	ch := s.chunks[0]
	s.chunks = s.chunks[1:]
	return ch, nil
}

func (s *bufferedChatStream) Close() error {
	s.c.closes.Add(1)
	return nil
}

// A chat stream whose ctx ends before the caller has its end — right after
// ChatStream returned (its first chunk, read while opening, is still
// delivered), midway, or after the chunk with the finish reason but before
// io.EOF — answers every later Recv with the ctx's cause, never with what
// its transport still had buffered nor with a clean io.EOF: the call was given back as cancelled, and the
// caller hears that. (The cancellation reaches the stream asynchronously,
// so the test waits for the call's end before reading on.) The observer sees exactly one call end, canceled; the
// one in-flight slot is free for the next call; Close returns nil.
func TestAuditChatStreamRecvAfterItsCtxEndedReturnsTheCauseNotBufferedChunks(t *testing.T) {
	errMine := errors.New("the request was abandoned")
	for name, readFirst := range map[string]int{
		"before the first Recv":        0,
		"midway":                       1,
		"after the finish reason came": 3,
	} {
		t.Run(name, func(t *testing.T) {
			tr := &bufferedChat{}
			gw, rec := newGateway(t, map[string]string{
				"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": "http://127.0.0.1:1",
				"CHAT__A__MAX_IN_FLIGHT": "1", "CHAT__QUOTA_FULL": "fail_fast",
			}, pgw.WithChatTransport(tr))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			st, err := gw.ChatStream(ctx, hello())
			require.NoError(t, err)
			for i := range readFirst {
				_, err := st.Recv()
				require.NoError(t, err, "chunk %d", i)
			}
			cancel(errMine)
			// The caller's cancellation reaches the call's ctx on a goroutine
			// of its own; the stream is closed for it once the observer has
			// the call's end.
			require.Eventually(t, func() bool { return len(rec.Results()) == 1 }, 10*time.Second, time.Millisecond)
			if readFirst == 0 {
				// The chunk read while opening was the caller's already.
				ch, err := st.Recv()
				require.NoError(t, err)
				assert.Equal(t, "Hello", ch.Delta)
			}
			for i := range 3 {
				ch, err := st.Recv()
				assert.ErrorIs(t, err, errMine, "Recv %d after the ctx ended", i)
				assert.Zero(t, ch, "Recv %d after the ctx ended delivers nothing", i)
			}
			assert.NoError(t, st.Close())
			assert.Equal(t, []string{"canceled"}, rec.Results(), "one call end")
			assert.Equal(t, []string{"a:canceled"}, rec.Outcomes())
			_, err = gw.Chat(context.Background(), hello())
			assert.NoError(t, err, "MAX_IN_FLIGHT=1: the slot is back")
		})
	}
}
