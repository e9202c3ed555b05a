package pgw_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// feedStream answers its first chunk at once, then whatever the test feeds
// it, until Close.
type feedStream struct {
	feed   chan pgw.ChatChunk
	closed chan struct{}
	first  bool
}

type feedTransport struct{ s *feedStream }

func (f feedTransport) ChatStream(context.Context, pgw.Source, pgw.ChatRequest) (pgw.ChatStream, error) {
	return f.s, nil
}

func (s *feedStream) Recv() (pgw.ChatChunk, error) {
	if !s.first {
		s.first = true
		return pgw.ChatChunk{Delta: "hi"}, nil
	}
	select {
	case ch := <-s.feed:
		return ch, nil
	case <-s.closed:
		return pgw.ChatChunk{}, errors.New("closed")
	}
}

func (s *feedStream) Close() error {
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}

// Close may be called from another goroutine while Recv reads a chunk that
// reports usage: the two must not race on the stream's usage (go test -race).
func TestChatStreamCloseWhileRecvReadsUsage(t *testing.T) {
	for range 20 {
		fs := &feedStream{feed: make(chan pgw.ChatChunk), closed: make(chan struct{})}
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":    "CHAT",
			"CHAT__SOURCES": "solo",
		}, pgw.WithChatTransport(feedTransport{fs}))
		st, err := gw.ChatStream(context.Background(), hello())
		require.NoError(t, err)
		ch, err := st.Recv()
		require.NoError(t, err)
		require.Equal(t, "hi", ch.Delta)

		got := make(chan struct{})
		go func() {
			defer close(got)
			_, _ = st.Recv()
			_ = st.Usage()
		}()
		fs.feed <- pgw.ChatChunk{Usage: &pgw.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}}
		require.NoError(t, st.Close())
		<-got
	}
}
