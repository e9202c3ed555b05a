package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
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
	l            *Loop
	tr           transport.ChatTransport
	firstTimeout time.Duration
	afterFunc    func(time.Duration, func()) func() bool
}

// NewChat returns the chat loop of l's scope over tr.
func NewChat(l *Loop, tr transport.ChatTransport, opt ChatOptions) *Chat {
	c := &Chat{l: l, tr: tr, firstTimeout: opt.FirstTokenTimeout, afterFunc: opt.AfterFunc}
	if c.afterFunc == nil {
		c.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return c
}

// Stream opens a governed streamed answer. Once it returns, the first chunk
// that carries part of the answer (text, a refusal or a tool-call piece) has
// arrived and the call no longer retries: a later failure is returned by
// Recv. A role-only or empty first event does not end the retrying. The
// stream holds the source's admission (probe lease, permit, pacer slot)
// until it ends — io.EOF, an error, or Close — so Close must be called.
//
// The request is checked before admission: an illegal value, or a field
// the provider of one of the scope's sources cannot express, is a
// *transport.RequestError, reported to the observer as a CallResult
// "caller_error" without attempts.
func (c *Chat) Stream(ctx context.Context, req transport.ChatRequest) (*Stream, error) {
	if err := c.check(req); err != nil {
		return nil, c.l.refuse(ctx, opChat, req.Model, err)
	}
	return runOp(ctx, c.l, opChat, req.Model, transport.EstimateTokens(req), true, func(actx context.Context, src config.Source, h *hold) (*Stream, transport.Usage, error) {
		return c.open(ctx, actx, src, req, h)
	})
}

// Complete runs a governed chat call and collects the whole answer. Nothing
// reaches the caller before the answer is complete, so every attempt is
// retried and fails over until one delivers a whole answer: a stream cut
// half-way is a failed attempt like any other, not the call's end.
func (c *Chat) Complete(ctx context.Context, req transport.ChatRequest) (transport.ChatResponse, error) {
	if err := c.check(req); err != nil {
		return transport.ChatResponse{}, c.l.refuse(ctx, opChat, req.Model, err)
	}
	return runOp(ctx, c.l, opChat, req.Model, transport.EstimateTokens(req), true, func(actx context.Context, src config.Source, h *hold) (transport.ChatResponse, transport.Usage, error) {
		a, err := c.first(actx, src, req, h)
		if err != nil {
			return transport.ChatResponse{}, transport.Usage{}, err
		}
		defer a.cancel()
		defer a.st.Close()
		var col transport.Collector
		for _, ch := range a.pending {
			col.Add(ch)
		}
		for !a.eof {
			ch, err := a.st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return transport.ChatResponse{}, transport.Usage{}, err
			}
			col.Add(ch)
		}
		resp := col.Response()
		resp.Source = src.Name
		return resp, resp.Usage, nil
	})
}

// check validates req, then asks the transport, when it can tell, whether
// every source of the scope can carry it: a field one fail-over target
// could not express fails the call before any attempt.
func (c *Chat) check(req transport.ChatRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	v, ok := c.tr.(transport.ChatValidator)
	if !ok {
		return nil
	}
	for _, name := range c.l.order {
		if err := v.ValidateChat(c.l.sources[name], req); err != nil {
			return err
		}
	}
	return nil
}

// opened is an attempt's stream up to its first chunk of content.
type opened struct {
	st transport.ChatStream
	// pending are the chunks read so far, the first of content last (or
	// every chunk of an answer without content).
	pending []transport.ChatChunk
	// eof: the stream already returned io.EOF.
	eof bool
	// cancel ends the stream's ctx.
	cancel func()
}

// first opens the stream of one attempt and reads up to its first chunk that
// carries part of the answer, under the first-token timeout. Chunks before
// it (the finish reason and usage of an empty answer) are kept in pending.
func (c *Chat) first(actx context.Context, src config.Source, req transport.ChatRequest, h *hold) (opened, error) {
	sctx, cancelCause := context.WithCancelCause(actx)
	stop := func() bool { return false }
	if c.firstTimeout > 0 {
		stop = c.afterFunc(c.firstTimeout, func() { cancelCause(ErrFirstTokenTimeout) })
	}
	var pending []transport.ChatChunk
	st, err := c.tr.ChatStream(sctx, src, req)
	for err == nil {
		var ch transport.ChatChunk
		if ch, err = st.Recv(); err != nil {
			break
		}
		pending = append(pending, ch)
		if ch.HasContent() {
			break
		}
	}
	stop()
	if err != nil && err != io.EOF {
		if st != nil {
			_ = st.Close()
		}
		if errors.Is(context.Cause(sctx), ErrFirstTokenTimeout) && actx.Err() == nil {
			err = fmt.Errorf("%w (%v on source %q)", ErrFirstTokenTimeout, c.firstTimeout, src.Name)
		}
		cancelCause(nil)
		return opened{}, err
	}
	if len(pending) > 0 {
		h.firstChunk(c.l)
	}
	return opened{st: st, pending: pending, eof: err == io.EOF, cancel: func() { cancelCause(nil) }}, nil
}

// open is one attempt of a streamed call: open the stream and wait for its
// first chunk of content.
func (c *Chat) open(ctx, actx context.Context, src config.Source, req transport.ChatRequest, h *hold) (*Stream, transport.Usage, error) {
	a, err := c.first(actx, src, req, h)
	if err != nil {
		return nil, transport.Usage{}, err
	}
	t, cancel := h.keep()
	s := &Stream{
		l:       c.l,
		ctx:     ctx,
		src:     seal(src),
		st:      a.st,
		ticket:  t,
		rep:     h.rep,
		cancel:  func() { a.cancel(); cancel() },
		pending: a.pending,
	}
	for _, ch := range a.pending {
		s.note(ch)
	}
	if a.eof {
		s.end = io.EOF
	}
	return s, transport.Usage{}, nil
}

// Stream is a governed chat stream (transport.ChatStream). Recv and Close
// follow the transport contract; Close may be called from another goroutine
// to abort a Recv, and more than once.
type Stream struct {
	l       *Loop
	ctx     context.Context // the caller's: tells a cancellation from a failure
	src     sealedSource    // for the credentials a cut's error must not show
	st      transport.ChatStream
	ticket  *admission.Ticket
	rep     *attemptReport // nil without an observer
	cancel  func()
	pending []transport.ChatChunk // read while opening, not yet returned
	end     error                 // set when the stream has ended: io.EOF or the error
	done    atomic.Bool
	// closing is set by Close before it closes the transport's stream, so
	// that the error a Recv blocked meanwhile gets is the caller's
	// abandonment, not the source's failure.
	closing atomic.Bool
	// ending is held while the stream's end is recorded and its admission
	// given back, so that Close racing a Recv that ends the stream returns
	// only once that is done.
	ending sync.Mutex
	// closeOnce closes the transport's stream once; closeErr is what that
	// returned.
	closeOnce sync.Once
	closeErr  error

	mu    sync.Mutex // usage: Close may read it while Recv writes it
	usage transport.Usage
}

var _ transport.ChatStream = (*Stream)(nil)

// Source returns the name of the source that answers.
func (s *Stream) Source() string { return s.ticket.Source }

// Usage returns the token usage reported so far (usually on the last chunk).
func (s *Stream) Usage() transport.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Recv returns the next chunk, io.EOF at the end, or the error that cut the
// stream — which is not retried, since the caller already has chunks. The
// end gives the source's admission back: Success at io.EOF, the error's
// class otherwise.
func (s *Stream) Recv() (transport.ChatChunk, error) {
	if len(s.pending) > 0 {
		ch := s.pending[0]
		s.pending = s.pending[1:]
		return ch, nil
	}
	if s.end == nil && s.ctx.Err() != nil {
		// The call's ctx ended and the stream was closed for it: what the
		// transport still holds (chunks it buffered, a "[DONE]") is not
		// read, so the caller hears why the stream ended rather than more
		// chunks and a clean end that the call's record contradicts.
		err := context.Cause(s.ctx)
		s.end = err
		s.finish(admission.Result{Outcome: released}, endedOutcome(s.ctx), err)
		return transport.ChatChunk{}, err
	}
	if s.end != nil {
		if s.end == io.EOF {
			s.finish(admission.Result{Outcome: success, Tokens: settled(s.Usage())}, observe.OutcomeSuccess, nil)
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
		s.finish(admission.Result{Outcome: success, Tokens: settled(s.Usage())}, observe.OutcomeSuccess, nil)
		return transport.ChatChunk{}, io.EOF
	}
	if d, ok := sourceHTTPError(err, s.src(), s.l.clock.Now()); ok {
		// A custom transport's SDK error, described and redacted as an
		// attempt's is.
		err = d
	}
	if s.ctx.Err() != nil {
		// The call's ctx ended — the caller's cancellation or deadline, or
		// the gateway's Close — and the stream was closed for it: whatever
		// the transport said as it closed, the caller hears why.
		err = context.Cause(s.ctx)
	}
	s.end = err
	switch {
	case s.ctx.Err() != nil:
		s.finish(admission.Result{Outcome: released}, endedOutcome(s.ctx), err)
	case s.closing.Load():
		s.finish(admission.Result{Outcome: released, Tokens: settled(s.Usage())}, observe.OutcomeAbandoned, nil)
	default:
		class := s.l.classify(err)
		s.finish(resultOf(class), outcomeOf(class), err)
	}
	return transport.ChatChunk{}, err
}

// Close releases the stream. Closing before io.EOF gives the admission back
// as Released: an abandoned answer says nothing about the source. A stream
// closed once its ctx has ended (the caller's cancellation or deadline, or
// the gateway's Close) is recorded as that end, not as abandoned. The
// transport's stream is closed once; every Close returns what that one did,
// without a credential (redactedSourceError).
func (s *Stream) Close() error {
	s.closing.Store(true)
	s.closeOnce.Do(func() {
		if s.st != nil {
			s.closeErr = redactedSourceError(s.st.Close(), s.src())
		}
	})
	outcome := observe.OutcomeAbandoned
	if s.ctx.Err() != nil {
		outcome = endedOutcome(s.ctx)
	}
	s.finish(admission.Result{Outcome: released, Tokens: settled(s.Usage())}, outcome, nil)
	return s.closeErr
}

func (s *Stream) note(ch transport.ChatChunk) {
	if ch.Usage != nil {
		s.mu.Lock()
		s.usage = *ch.Usage
		s.mu.Unlock()
	}
}

// finish gives the admission back once and ends the stream's ctx. With an
// observer it reports the attempt (outcome, err), then gives back — so a
// state change the outcome causes follows it — then the call's result.
func (s *Stream) finish(r admission.Result, outcome string, err error) {
	s.ending.Lock()
	defer s.ending.Unlock()
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	called := false
	defer func() {
		if !called && s.rep != nil {
			// The observer panicked on the attempt's end or on the state
			// change it caused: the call still ends (its CallResult, its
			// span) before the panic goes on to whoever ended the stream.
			s.rep.r.end(observe.ResultError, errPanicked)
		}
	}()
	func() {
		// Given back even when the report panics (an observer's bug),
		// and the ctx ended even when a state change the give-back shows
		// does.
		defer s.cancel()
		defer func() { _ = s.ticket.Done(s.ctx, r) }()
		s.rep.end(outcome, err, s.Usage())
	}()
	called = true
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
	case outcome == observe.OutcomeClosed:
		return observe.ResultClosed
	case outcome == observe.OutcomeCanceled || ctx.Err() != nil:
		if errs.ClosedBy(ctx) {
			return observe.ResultClosed
		}
		return observe.ResultCanceled
	}
	return observe.ResultError // cut after the first chunk: not retried
}

// Finished reports whether the stream has ended and given its admission
// back: at io.EOF, at the error that cut it, or at its Close — also when
// the observer panicked as that end was reported.
func (s *Stream) Finished() bool { return s.done.Load() }

// UnknownEvents returns how many events of a type its transport does not
// know the stream has skipped, when the transport counts them (0 otherwise).
func (s *Stream) UnknownEvents() int {
	if c, ok := s.st.(transport.EventCounter); ok {
		return c.UnknownEvents()
	}
	return 0
}
