package pgw

import (
	"errors"
	"io"

	"github.com/pgw-go/pgw/retry"
)

// Stream is a governed streamed chat answer (GatewayClient.ChatStream). It
// implements ChatStream: Recv returns chunks until io.EOF; Close must be
// called unless Recv returned io.EOF or an error, and may be called from
// another goroutine to abort a Recv, and more than once.
type Stream struct {
	g  *GatewayClient
	st *retry.Stream
	c  *call
	// scope is the scope of the call, for the log of an observer's panic.
	scope string
	// guard closes the stream when its call's ctx ends (the caller's
	// cancellation or deadline, the gateway's Close), so that a stream
	// nobody reads or closes gives its admission back.
	guard endGuard
}

var _ ChatStream = (*Stream)(nil)

// errNilStream is what Recv and Close return on a nil *Stream (the one
// ChatStream returns with an error).
var errNilStream = errors.New("pgw: nil *Stream")

// Source returns the name of the source that answers.
func (s *Stream) Source() string { return s.st.Source() }

// Usage returns the token usage reported so far (usually on the last chunk).
func (s *Stream) Usage() Usage { return s.st.Usage() }

// UnknownEvents returns how many events of a type the transport does not
// know (a provider's newer events) the stream has skipped rather than
// failed on.
func (s *Stream) UnknownEvents() int { return s.st.UnknownEvents() }

// Recv returns the next chunk, io.EOF at the end, or the error that cut the
// stream: ErrClosed when the gateway was closed, the cause of the ctx given
// to ChatStream when that ended (context.Canceled, DeadlineExceeded, or the
// cause given to its cancel). The stream's end gives the source's admission
// back.
func (s *Stream) Recv() (ChatChunk, error) {
	if s == nil {
		return ChatChunk{}, errNilStream
	}
	returned := false
	defer func() {
		if !returned && s.st.Finished() {
			// The observer panicked on the stream's end: the call ends
			// anyway, and the panic goes on.
			s.end(nil)
		}
	}()
	ch, err := s.st.Recv()
	returned = true
	switch {
	case err == io.EOF:
		s.end(nil)
	case err != nil:
		err = s.end(err)
	}
	return ch, err
}

// Close releases the stream; closing before io.EOF gives the admission back
// as Released (an abandoned answer says nothing about the source). Close is
// idempotent: a later Close, or one after the stream's ctx ended and closed
// it, returns what the first did.
func (s *Stream) Close() error {
	if s == nil {
		return errNilStream
	}
	// The call ends even when the observer panics on the end the close
	// reports (the panic goes on to whoever closed it).
	defer s.end(nil)
	return s.st.Close()
}

// end ends the stream's call: it disarms the guard, leaves the gateway's
// open streams and gives back the call's registration (once).
func (s *Stream) end(err error) error {
	s.guard.end() // before the call's end, which stops the ctx the guard watches
	s.g.mu.Lock()
	delete(s.g.streams, s)
	s.g.mu.Unlock()
	return s.c.end(err)
}
