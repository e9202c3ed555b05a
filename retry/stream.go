package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/transport"
)

// Items is a stream an attempt opens on one source: Recv returns items until
// io.EOF or an error; Close releases it. Close may be called from another
// goroutine to abort a Recv.
type Items[T any] interface {
	// Recv returns the next item, io.EOF after the last one, or the error
	// that ended the stream.
	Recv() (T, error)
	// Close releases the stream, and makes a Recv blocked in another
	// goroutine return.
	Close() error
}

// MaxReadAhead bounds how many items a stream-aware call holds back while it
// waits for the stream's first item (StreamSpec.First): a stream that sends
// that many items without one is handed over as it is, so that a chatty
// preamble cannot grow without bound.
const MaxReadAhead = 256

// StreamSpec describes a stream-aware governed call (OpenStream). Open is
// required; every other zero field means its default.
type StreamSpec[T any] struct {
	// Open opens the stream on src. ctx is the attempt's: it carries the
	// source's timeout, which bounds the whole stream, and it stays alive
	// until the stream ends. A nil pointer (or other nil value) of a
	// stream type is no stream: an SDK's (*Stream)(nil), err passes as it
	// is returned, and is not closed.
	Open func(ctx context.Context, src config.Source) (Items[T], error)
	// First reports whether item is the stream's first item: until one
	// arrives the call retries and fails over; after it the stream is the
	// caller's and a failure is no longer retried. Items before it are held
	// back and delivered first, in order. nil means any item.
	First func(item T) bool
	// Terminal reports whether item is the stream's last: once the caller
	// has it, the call is recorded as a success and its admission given
	// back, even if the caller closes before io.EOF; the stream is read on
	// (later items are delivered, and anything that ends it is io.EOF),
	// and its ctx and OnEnd wait for that end or Close. nil means only
	// io.EOF ends a stream successfully.
	Terminal func(item T) bool
	// Failed returns the upstream error an item reports (an error event in
	// the stream), nil for an ordinary item. Before the first item it fails
	// the attempt; after it the item is delivered and the call recorded with
	// the error's class.
	Failed func(item T) error
	// Usage returns the token usage an item reports; its non-zero fields
	// replace those seen before, and while no item reported TotalTokens it
	// is PromptTokens + CompletionTokens. The last usage settles the quota.
	Usage func(item T) (transport.Usage, bool)
	// EstTokens is reserved with the quota and settled to the usage.
	EstTokens int64
	// OnEnd, when set, runs once when the call no longer holds an
	// admission: when the stream ends (io.EOF, its terminal item, an error
	// or Close), or before OpenStream returns a stream that was complete
	// already. It does not run when OpenStream returns an error.
	OnEnd func()
	// Err, when set, maps the error that cut the stream before Recv returns
	// it (and every later Recv): the gateway turns an interruption by its
	// Close into its ErrClosed. The stream's outcome is classified from the
	// error itself.
	Err func(error) error
}

// OpenStream runs a stream-aware governed call of l's scope: admission, one
// attempt per round, classification, backoff and fail-over as Run does,
// until an attempt's stream yields its first item; like the chat loop, a
// source that failed in the call is tried after the others for the rest of
// it. The stream returned then
// holds the source's admission (probe lease, permit, pacer slot) until it
// ends, and records the end: Success at io.EOF or the terminal item, the
// error's class when the stream fails, Released when the caller closes it
// early or its ctx is cancelled. Close must be called.
//
// A stream that ended within the read-ahead (a whole answer in one item, an
// empty stream) is recorded at once and holds nothing.
func OpenStream[T any](ctx context.Context, l *Loop, spec StreamSpec[T]) (*ItemStream[T], error) {
	if spec.Open == nil {
		return nil, errors.New("pgw/retry: OpenStream with a nil StreamSpec.Open")
	}
	s, err := run(ctx, l, spec.EstTokens, true, func(actx context.Context, src config.Source, h *hold) (*ItemStream[T], transport.Usage, error) {
		return openItems(ctx, actx, l, src, &spec, h)
	})
	if err != nil {
		return nil, err
	}
	if s.ticket == nil && spec.OnEnd != nil {
		spec.OnEnd()
	}
	return s, nil
}

// nilItems reports whether items is nil, or holds a nil pointer, map,
// slice, channel or function.
func nilItems[T any](items Items[T]) bool {
	if items == nil {
		return true
	}
	switch v := reflect.ValueOf(items); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// openItems is one attempt of a stream-aware call: open the stream and read
// ahead to its first item.
func openItems[T any](ctx, actx context.Context, l *Loop, src config.Source, spec *StreamSpec[T], h *hold) (*ItemStream[T], transport.Usage, error) {
	s := &ItemStream[T]{l: l, ctx: ctx, spec: spec, source: src.Name, src: seal(src)}
	items, err := spec.Open(actx, src)
	if nilItems(items) {
		// go-openai's CreateChatCompletionStream returns a nil
		// *ChatCompletionStream with its error: as an Items it is not nil,
		// and its Close would panic.
		items = nil
	}
	if err != nil {
		if items != nil {
			_ = items.Close()
		}
		return nil, transport.Usage{}, err
	}
	if items == nil {
		return nil, transport.Usage{}, fmt.Errorf("pgw/retry: source %q: the stream's Open returned neither a stream nor an error", src.Name)
	}
	s.items = items
	for {
		it, err := items.Recv()
		if err == io.EOF {
			// A clean end within the read-ahead: the answer is whole.
			s.end = io.EOF
			break
		}
		if err != nil {
			s.closeItems()
			return nil, transport.Usage{}, err
		}
		if spec.Failed != nil {
			if ferr := spec.Failed(it); ferr != nil {
				s.closeItems()
				return nil, transport.Usage{}, ferr
			}
		}
		s.note(it)
		s.ahead = append(s.ahead, it)
		if spec.Terminal != nil && spec.Terminal(it) {
			// The answer is whole: read on to the end so that the stream
			// holds nothing once the attempt returns. Anything after the
			// terminal item is not part of the answer.
			for len(s.ahead) < 2*MaxReadAhead {
				it, err := items.Recv()
				if err != nil {
					break
				}
				s.note(it)
				s.ahead = append(s.ahead, it)
			}
			s.end = io.EOF
			break
		}
		if spec.First == nil || spec.First(it) || len(s.ahead) >= MaxReadAhead {
			break
		}
	}
	h.firstChunk(l)
	if s.end == io.EOF {
		// Complete within the read-ahead: the loop records the success and
		// gives the admission back as the attempt returns.
		s.closeItems()
		s.done.Store(true)
		return s, s.Usage(), nil
	}
	t, cancel := h.keep()
	s.ticket, s.rep, s.cancel = t, h.rep, cancel
	return s, transport.Usage{}, nil
}

// ItemStream is a governed stream (OpenStream): Recv returns the items read
// ahead, then the source's, until io.EOF or the error that cut the stream —
// which is not retried, since the caller already has items. Close may be
// called from another goroutine to abort a Recv, and more than once. Recv is
// not safe for concurrent use.
type ItemStream[T any] struct {
	l      *Loop
	ctx    context.Context // the caller's: tells a cancellation from a failure
	spec   *StreamSpec[T]
	source string
	src    sealedSource // for the credentials a cut's error must not show
	items  Items[T]
	ticket *admission.Ticket // nil when the stream was complete at open
	rep    *attemptReport    // nil without an observer
	cancel context.CancelFunc
	ahead  []T
	end    error // io.EOF or the inner stream's error, once it ended

	closeOnce sync.Once
	closeErr  error
	// closing is set by Close before it closes the inner stream, so that
	// the error a Recv blocked meanwhile gets is the caller's abandonment,
	// not the source's failure.
	closing atomic.Bool

	mu    sync.Mutex // usage: Close may read it while Recv writes it
	usage transport.Usage
	total bool // an item reported TotalTokens: it is not the sum
	done  atomic.Bool
	// whole is set when the terminal item was delivered: the call is the
	// source's success and its admission back, but the inner stream is
	// still read to its end (what follows, such as a last chunk of usage,
	// is delivered) and its ctx lives until then or Close; whatever ends
	// it after that is io.EOF.
	whole   atomic.Bool
	stopped atomic.Bool // stopWhole ran
	// ending is held while the stream's end is recorded and its admission
	// given back, so that an end racing another (the caller's Close while
	// a cancellation closes the stream) returns only once that is done.
	ending sync.Mutex
}

// Source returns the name of the source that answers.
func (s *ItemStream[T]) Source() string { return s.source }

// Format prints the stream as the name of its source, under every verb:
// what the stream holds to run (the loop, with every source's settings, and
// the source's credentials) is not for a debug print or a log attribute to
// open.
func (s *ItemStream[T]) Format(f fmt.State, _ rune) {
	if s == nil {
		_, _ = io.WriteString(f, "<nil>")
		return
	}
	_, _ = fmt.Fprintf(f, "ItemStream(source %s)", s.source)
}

// Items returns the stream the winning attempt opened, for what it carries
// besides its items (an HTTP response's status and headers).
func (s *ItemStream[T]) Items() Items[T] { return s.items }

// Usage returns the token usage reported so far.
func (s *ItemStream[T]) Usage() transport.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Held reports whether the stream still holds its source's admission.
func (s *ItemStream[T]) Held() bool { return !s.done.Load() }

// Recv returns the next item, io.EOF at the end, or the error that cut the
// stream. The stream's end gives the admission back.
func (s *ItemStream[T]) Recv() (T, error) {
	var zero T
	if len(s.ahead) > 0 {
		it := s.ahead[0]
		s.ahead[0] = zero
		s.ahead = s.ahead[1:]
		s.deliver(it)
		return it, nil
	}
	if s.end != nil {
		if s.end == io.EOF {
			s.succeed()
		}
		return zero, s.end
	}
	it, err := s.items.Recv()
	switch {
	case err == nil:
		s.note(it)
		s.deliver(it)
		return it, nil
	case err == io.EOF || s.whole.Load():
		// After the terminal item the answer is whole: an error past it
		// (the ctx of an attempt that ended, a body cut after the last
		// event) is not part of it.
		s.end = io.EOF
		s.succeed()
		s.stopWhole()
		return zero, io.EOF
	}
	if d, ok := sourceHTTPError(err, s.src(), s.l.clock.Now()); ok {
		// An SDK's error, described and redacted as an attempt's is.
		err = d
	}
	cut := err
	if s.ctx.Err() != nil {
		// The call's ctx ended — the caller's cancellation or deadline, or
		// the gateway's Close — and the stream was closed for it: whatever
		// the inner stream said as it closed, the caller hears why.
		cut = context.Cause(s.ctx)
	}
	if s.spec.Err != nil {
		cut = s.spec.Err(cut)
	}
	s.end = cut
	s.fail(err)
	return zero, cut
}

// Close releases the stream. Closing before its end gives the admission back
// as Released: an abandoned answer says nothing about the source. Closed
// once its ctx has ended, the stream is recorded as that end (canceled, or
// closed for the gateway's Close) rather than as abandoned.
func (s *ItemStream[T]) Close() error {
	s.closing.Store(true)
	err := s.closeItems()
	outcome := observe.OutcomeAbandoned
	if s.ctx.Err() != nil {
		// Closed for its ctx's end (the caller's cancellation or deadline,
		// or the gateway's Close): recorded as that end.
		outcome = endedOutcome(s.ctx)
	}
	s.finish(admission.Result{Outcome: released, Tokens: settled(s.Usage())}, outcome, nil)
	s.stopWhole()
	return err
}

// stopWhole ends the attempt's ctx of a stream whose terminal item ended
// the call, and runs its OnEnd: finish left both to the stream's end or
// Close. Once.
func (s *ItemStream[T]) stopWhole() {
	if !s.whole.Load() || !s.stopped.CompareAndSwap(false, true) {
		return
	}
	if s.spec.OnEnd != nil {
		defer s.spec.OnEnd()
	}
	if s.cancel != nil {
		s.cancel()
	}
}

// deliver records the end a delivered item marks, if any.
func (s *ItemStream[T]) deliver(it T) {
	if s.done.Load() {
		return
	}
	if s.spec.Failed != nil {
		if err := s.spec.Failed(it); err != nil {
			s.fail(err)
			return
		}
	}
	if s.spec.Terminal != nil && s.spec.Terminal(it) {
		s.whole.Store(true)
		s.succeed()
	}
}

func (s *ItemStream[T]) succeed() {
	s.finish(admission.Result{Outcome: success, Tokens: settled(s.Usage())}, observe.OutcomeSuccess, nil)
}

func (s *ItemStream[T]) fail(err error) {
	if s.ctx.Err() != nil {
		s.finish(admission.Result{Outcome: released}, endedOutcome(s.ctx), err)
		return
	}
	if s.closing.Load() {
		s.finish(admission.Result{Outcome: released, Tokens: settled(s.Usage())}, observe.OutcomeAbandoned, nil)
		return
	}
	class := s.l.classify(err)
	if class == Success {
		class = Failure // an error that cut a stream is never its success
	}
	s.finish(resultOf(class), outcomeOf(class), err)
}

func (s *ItemStream[T]) note(it T) {
	if s.spec.Usage == nil {
		return
	}
	u, ok := s.spec.Usage(it)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.PromptTokens > 0 {
		s.usage.PromptTokens = u.PromptTokens
	}
	if u.CompletionTokens > 0 {
		s.usage.CompletionTokens = u.CompletionTokens
	}
	if u.CachedPromptTokens > 0 {
		s.usage.CachedPromptTokens = u.CachedPromptTokens
	}
	if u.ReasoningTokens > 0 {
		s.usage.ReasoningTokens = u.ReasoningTokens
	}
	if u.TotalTokens > 0 {
		s.usage.TotalTokens, s.total = u.TotalTokens, true
	} else if !s.total {
		// Never reported (Anthropic's events): the sum, as Usage says.
		s.usage.TotalTokens = s.usage.PromptTokens + s.usage.CompletionTokens
	}
}

// finish gives the admission back once, ends the stream's ctx and runs
// OnEnd. With an observer it reports the attempt, then gives back (so a
// state change the outcome causes follows it), then the call's result.
func (s *ItemStream[T]) finish(r admission.Result, outcome string, err error) {
	s.ending.Lock()
	defer s.ending.Unlock()
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	if s.spec.OnEnd != nil && !s.whole.Load() {
		// Last, and even when the observer panics on a report. A whole
		// stream's runs at its end or Close (stopWhole).
		defer s.spec.OnEnd()
	}
	called := false
	defer func() {
		if !called && s.rep != nil {
			// The observer panicked on the attempt's end or on the state
			// change it caused: the call still ends (its CallResult, its
			// span) before the panic goes on.
			s.rep.r.end(observe.ResultError, errPanicked)
		}
	}()
	usage := s.Usage()
	func() {
		// Given back even when the report panics (an observer's bug),
		// and the ctx ended even when a state change the give-back shows
		// does — save a whole stream's, which lives to its end or Close.
		defer func() {
			if !s.whole.Load() {
				s.cancel()
			}
		}()
		defer func() { _ = s.ticket.Done(s.ctx, r) }()
		s.rep.end(outcome, err, usage)
	}()
	called = true
	if s.rep != nil {
		s.rep.r.end(streamResult(s.ctx, outcome), err)
	}
}

// discard gives back a stream whose hedge race it did not win: its items
// are closed, its admission Released with the tokens it reported, its
// attempt reported with outcome and err (discarder). OnEnd does not run and
// the call's end is not reported: the winner's stream does both, or the
// call's end. Nothing of it reaches the caller.
func (s *ItemStream[T]) discard(outcome string, err error) {
	s.ending.Lock()
	defer s.ending.Unlock()
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	_ = s.closeItems()
	usage := s.Usage()
	defer s.cancel()
	defer func() { _ = s.ticket.Done(s.ctx, admission.Result{Outcome: released, Tokens: lostTokens(usage)}) }()
	s.rep.end(outcome, err, usage)
}

// closeItems closes the inner stream once; its error shows no credential
// (redactedSourceError).
func (s *ItemStream[T]) closeItems() error {
	s.closeOnce.Do(func() { s.closeErr = redactedSourceError(s.items.Close(), s.src()) })
	return s.closeErr
}
