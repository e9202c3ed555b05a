package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// ErrFirstTokenTimeout is the failure of a chat attempt whose source sent no
// first chunk within the first-token timeout: an ordinary Failure, so the
// call fails over.
var ErrFirstTokenTimeout = errors.New("pgw/retry: no first chunk within the first-token timeout")

// ChatOptions tunes a Chat loop. The zero value means the defaults.
type ChatOptions struct {
	// FirstTokenTimeout bounds the wait for an attempt's first chunk; 0
	// means only the source's Timeout, which bounds the whole stream.
	FirstTokenTimeout time.Duration
	// AfterFunc arms the first-token timer: it calls f after d unless the
	// returned stop is called first (default time.AfterFunc). Tests fire it
	// by hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Chat is the chat loop: streaming, with retries and fail-over only before
// the first chunk reaches the caller, a first-token timeout and a total
// timeout (the source's Timeout) per attempt, the scope's pacer and in-call
// demotion. Safe for concurrent use.
type Chat struct {
	l         *Loop
	tr        transport.ChatTransport
	first     time.Duration
	afterFunc func(time.Duration, func()) func() bool
}

// NewChat returns the chat loop of l's scope over tr.
func NewChat(l *Loop, tr transport.ChatTransport, opt ChatOptions) *Chat {
	c := &Chat{l: l, tr: tr, first: opt.FirstTokenTimeout, afterFunc: opt.AfterFunc}
	if c.afterFunc == nil {
		c.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return c
}

// Stream opens a governed streamed answer. Once it returns, the first chunk
// has arrived and the call no longer retries: a later failure is returned by
// Recv. The stream holds the source's admission (probe lease, permit, pacer
// slot) until it ends — io.EOF, an error, or Close — so Close must be called.
func (c *Chat) Stream(ctx context.Context, req transport.ChatRequest) (*Stream, error) {
	return runOp(ctx, c.l, opChat, req.Model, estimateChat(req), true, func(actx context.Context, src config.Source, h *hold) (*Stream, transport.Usage, error) {
		return c.open(ctx, actx, src, req, h)
	})
}

// Complete runs Stream and collects the whole answer.
func (c *Chat) Complete(ctx context.Context, req transport.ChatRequest) (transport.ChatResponse, error) {
	s, err := c.Stream(ctx, req)
	if err != nil {
		return transport.ChatResponse{}, err
	}
	defer s.Close()
	var b strings.Builder
	resp := transport.ChatResponse{Source: s.Source()}
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			resp.Content = b.String()
			resp.Usage = s.Usage()
			return resp, nil
		}
		if err != nil {
			return transport.ChatResponse{}, err
		}
		b.WriteString(ch.Delta)
		if ch.FinishReason != "" {
			resp.FinishReason = ch.FinishReason
		}
	}
}

// open is one chat attempt: open the stream and wait for its first chunk.
func (c *Chat) open(ctx, actx context.Context, src config.Source, req transport.ChatRequest, h *hold) (*Stream, transport.Usage, error) {
	sctx, cancelCause := context.WithCancelCause(actx)
	stop := func() bool { return false }
	if c.first > 0 {
		stop = c.afterFunc(c.first, func() { cancelCause(ErrFirstTokenTimeout) })
	}
	st, err := c.tr.ChatStream(sctx, src, req)
	var first transport.ChatChunk
	if err == nil {
		first, err = st.Recv()
	}
	stop()
	if err != nil && err != io.EOF {
		if st != nil {
			_ = st.Close()
		}
		if errors.Is(context.Cause(sctx), ErrFirstTokenTimeout) && actx.Err() == nil {
			err = fmt.Errorf("%w (%v on source %q)", ErrFirstTokenTimeout, c.first, src.Name)
		}
		cancelCause(nil)
		return nil, transport.Usage{}, err
	}
	t, cancel := h.keep()
	if err == nil {
		h.firstChunk(c.l)
	}
	s := &Stream{
		l:      c.l,
		ctx:    ctx,
		st:     st,
		ticket: t,
		rep:    h.rep,
		cancel: func() { cancelCause(nil); cancel() },
	}
	if err == io.EOF {
		s.end = io.EOF
	} else {
		s.pending, s.first = true, first
		s.note(first)
	}
	return s, transport.Usage{}, nil
}

// Stream is a governed chat stream (transport.ChatStream). Recv and Close
// follow the transport contract; Close may be called from another goroutine
// to abort a Recv, and more than once.
type Stream struct {
	l       *Loop
	ctx     context.Context // the caller's: tells a cancellation from a failure
	st      transport.ChatStream
	ticket  *admission.Ticket
	rep     *attemptReport // nil without an observer
	cancel  func()
	first   transport.ChatChunk
	pending bool
	usage   transport.Usage
	end     error // set when the stream has ended: io.EOF or the error
	done    atomic.Bool
}

var _ transport.ChatStream = (*Stream)(nil)

// Source returns the name of the source that answers.
func (s *Stream) Source() string { return s.ticket.Source }

// Usage returns the token usage reported so far (usually on the last chunk).
func (s *Stream) Usage() transport.Usage { return s.usage }

// Recv returns the next chunk, io.EOF at the end, or the error that cut the
// stream — which is not retried, since the caller already has chunks. The
// end gives the source's admission back: Success at io.EOF, the error's
// class otherwise.
func (s *Stream) Recv() (transport.ChatChunk, error) {
	if s.pending {
		s.pending = false
		return s.first, nil
	}
	if s.end != nil {
		if s.end == io.EOF {
			s.finish(admission.Result{Outcome: success, Tokens: settled(s.usage)}, observe.OutcomeSuccess, nil)
		}
		return transport.ChatChunk{}, s.end
	}
	ch, err := s.st.Recv()
	switch {
	case err == nil:
		s.note(ch)
		return ch, nil
	case err == io.EOF:
		s.end = io.EOF
		s.finish(admission.Result{Outcome: success, Tokens: settled(s.usage)}, observe.OutcomeSuccess, nil)
		return transport.ChatChunk{}, io.EOF
	}
	s.end = err
	if s.ctx.Err() != nil {
		s.finish(admission.Result{Outcome: released}, observe.OutcomeCanceled, err)
	} else {
		class := s.l.classify(err)
		s.finish(resultOf(class), outcomeOf(class), err)
	}
	return transport.ChatChunk{}, err
}

// Close releases the stream. Closing before io.EOF gives the admission back
// as Released: an abandoned answer says nothing about the source.
func (s *Stream) Close() error {
	var err error
	if s.st != nil {
		err = s.st.Close()
	}
	s.finish(admission.Result{Outcome: released, Tokens: settled(s.usage)}, observe.OutcomeAbandoned, nil)
	return err
}

func (s *Stream) note(ch transport.ChatChunk) {
	if ch.Usage != nil {
		s.usage = *ch.Usage
	}
}

// finish gives the admission back once and ends the stream's ctx. With an
// observer it reports the attempt (outcome, err), then gives back — so a
// state change the outcome causes follows it — then the call's result.
func (s *Stream) finish(r admission.Result, outcome string, err error) {
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	s.rep.end(outcome, err, s.usage)
	_ = s.ticket.Done(s.ctx, r)
	s.cancel()
	if s.rep != nil {
		s.rep.r.end(streamResult(s.ctx, outcome), err)
	}
}

// streamResult is the CallResult.Result of a call whose stream ended with
// outcome: the stream's end is the call's.
func streamResult(ctx context.Context, outcome string) string {
	switch {
	case outcome == observe.OutcomeSuccess:
		return observe.ResultSuccess
	case outcome == observe.OutcomeAbandoned:
		return observe.ResultAbandoned
	case outcome == observe.OutcomeCanceled || ctx.Err() != nil:
		return observe.ResultCanceled
	}
	return observe.ResultError // cut after the first chunk: not retried
}

// estimateChat is the token reservation of a chat request: the caller's
// estimate, or about four characters per token of the messages plus the
// answer's MaxTokens.
func estimateChat(req transport.ChatRequest) int64 {
	if req.EstTokens > 0 {
		return int64(req.EstTokens)
	}
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Role)
	}
	return int64((n+3)/4 + max(req.MaxTokens, 0))
}
