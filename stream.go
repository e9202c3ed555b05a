package pgw

import (
	"context"
	"io"
	"sync"

	"github.com/pgw-go/pgw/retry"
)

// Stream is a governed streamed chat answer (GatewayClient.ChatStream). It
// implements ChatStream: Recv returns chunks until io.EOF; Close must be
// called unless Recv returned io.EOF or an error, and may be called from
// another goroutine to abort a Recv, and more than once.
type Stream struct {
	g    *GatewayClient
	st   *retry.Stream
	ctx  context.Context // the caller's
	cctx context.Context // the call's: the caller's, also cancelled by Close
	done func()
	once sync.Once
}

var _ ChatStream = (*Stream)(nil)

// Source returns the name of the source that answers.
func (s *Stream) Source() string { return s.st.Source() }

// Usage returns the token usage reported so far (usually on the last chunk).
func (s *Stream) Usage() Usage { return s.st.Usage() }

// Recv returns the next chunk, io.EOF at the end, or the error that cut the
// stream (ErrClosed when the gateway was closed). The stream's end gives the
// source's admission back.
func (s *Stream) Recv() (ChatChunk, error) {
	ch, err := s.st.Recv()
	if err != nil {
		s.end()
		if err != io.EOF {
			err = s.g.closedErr(s.ctx, s.cctx, err)
		}
	}
	return ch, err
}

// Close releases the stream; closing before io.EOF gives the admission back
// as Released (an abandoned answer says nothing about the source).
func (s *Stream) Close() error {
	err := s.st.Close()
	s.end()
	return err
}

// end deregisters the stream from its gateway, once.
func (s *Stream) end() {
	s.once.Do(func() {
		s.g.mu.Lock()
		delete(s.g.streams, s)
		s.g.mu.Unlock()
		s.done()
	})
}
