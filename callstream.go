package pgw

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/pgw-go/pgw/internal/ownpanic"
	"github.com/pgw-go/pgw/retry"
)

// Streamer is a stream that a CallStream function opens on one source: Recv
// returns its items until io.EOF (or the error that cut it); Close releases
// it and may be called from another goroutine to abort a Recv. Adapt an
// SDK's Next/Current/Err stream with FromIterator.
type Streamer[T any] = retry.Items[T]

// ItemStream is a governed stream (CallStream): Recv returns items until
// io.EOF or the error that cut the stream (ErrClosed when the gateway's
// Close interrupted it); Source, Usage and Held tell which
// source answers, the tokens reported so far and whether the admission is
// still held. Close must be called (a second Close does nothing); it may be
// called from another goroutine to abort a Recv.
type ItemStream[T any] = retry.ItemStream[T]

// StreamOption tunes CallStream.
type StreamOption[T any] func(*retry.StreamSpec[T])

// FirstItem sets what counts as the stream's first item: until one
// arrives, CallStream retries and fails over; the items before it are
// delivered first. Without it, any item is the first. For a chat stream,
// pass a test for "carries content" so that a role-only opening chunk does
// not end the retries.
func FirstItem[T any](first func(item T) bool) StreamOption[T] {
	return func(s *retry.StreamSpec[T]) { s.First = first }
}

// TerminalItem sets what counts as the stream's last item: once the caller
// has it the call is a success and the source's admission is given back
// (the tokens settled are those the items up to it, itself included,
// reported), even if the caller closes before io.EOF. The stream still
// reads on: items after it are delivered, and whatever ends the stream
// after it, an error included, is io.EOF; its ctx lives until then or
// Close. Usage an item after it reports is not settled: when the usage
// comes after the answer's end (openai-go with include_usage sends a chunk
// with no choices and the request's usage after the finish reason), name
// that item as the terminal one. A stream that reaches io.EOF without it was
// cut (an SDK's stream often ends cleanly on a body closed early —
// openai-go's does without its "data: [DONE]"): Recv returns an error
// matching io.ErrUnexpectedEOF, the call is the source's failure, and
// before the first item it fails over. Without it, io.EOF ends a stream
// successfully.
func TerminalItem[T any](terminal func(item T) bool) StreamOption[T] {
	return func(s *retry.StreamSpec[T]) { s.Terminal = terminal }
}

// ItemUsage reads the token usage an item reports (ok false when it reports
// none); non-zero fields replace those seen before (TotalTokens, while no
// item reported one, is PromptTokens + CompletionTokens), and the last usage
// settles the source's token quota at the stream's end.
func ItemUsage[T any](usage func(item T) (u Usage, ok bool)) StreamOption[T] {
	return func(s *retry.StreamSpec[T]) { s.Usage = usage }
}

// EstimateTokens reserves n tokens of the source's token quota for the call
// until its usage settles it (default 0).
func EstimateTokens[T any](n int64) StreamOption[T] {
	return func(s *retry.StreamSpec[T]) { s.EstTokens = max(n, 0) }
}

// CallStream runs a stream-aware governed call in scope. open is one
// attempt: it opens a stream on src and returns it (an error that carries
// an HTTP status — a *HTTPError or an SDK's error — is classified as Call
// classifies it, and its text shows no credential, as Call's does). CallStream reads ahead to the stream's first item
// (FirstItem); until it arrives an error, a cut or an error return retries
// and fails over under the scope's admission, backoff and budget (open may
// return an SDK's stream and error as they come — go-openai's
// CreateChatCompletionStream, whose stream is a Streamer as it is: a nil
// pointer stream beside an error is no stream, and is not closed). Then the
// stream is returned and holds its source's admission (probe lease, quota
// permit, pacer slot) until it ends: Success at io.EOF — or, with a
// TerminalItem, at the terminal item, io.EOF before it being a cut — a
// failure of the error's class when it is cut,
// Released when the caller closes it early; ItemUsage settles the tokens.
//
// ctx bounds the whole stream, and so does the attempt's ctx that open
// receives (its source's TIMEOUT_S): open must tie the stream to that ctx.
// A stream that ended within the read-ahead holds nothing once CallStream
// returns. Close on the gateway closes open streams. An SDK's error that
// cuts the stream after it was returned is redacted as Call redacts one;
// errors.As still reaches the SDK's own value.
func CallStream[T any](ctx context.Context, gw *GatewayClient, scope string, open func(ctx context.Context, src Source) (Streamer[T], error), opts ...StreamOption[T]) (*ItemStream[T], error) {
	if gw == nil {
		return nil, errors.New("pgw: CallStream with a nil *GatewayClient")
	}
	if open == nil {
		return nil, errors.New("pgw: CallStream with a nil open function")
	}
	sc, err := gw.scope(scope)
	if err != nil {
		return nil, err
	}
	c, err := gw.enter(ctx)
	if err != nil {
		return nil, err
	}
	var guard endGuard
	spec := retry.StreamSpec[T]{Open: open}
	for _, o := range opts {
		if o != nil {
			o(&spec)
		}
	}
	if spec.Terminal != nil {
		open, terminal := spec.Open, spec.Terminal
		spec.Open = func(ctx context.Context, src Source) (Streamer[T], error) {
			inner, err := open(ctx, src)
			if err != nil || inner == nil {
				return inner, err
			}
			return &terminalWatch[T]{inner: inner, terminal: terminal}, nil
		}
	}
	spec.OnEnd = func() {
		guard.end()
		_ = c.end(nil)
	}
	spec.Err = c.closedErr
	ended := false
	defer func() {
		if !ended { // open panicked: release the call, let the panic go on
			_ = c.end(nil)
		}
	}()
	st, err := retry.OpenStream(&c.cc, sc.loop, spec)
	ended = true
	if err != nil {
		return nil, c.end(err)
	}
	if st.Held() {
		guard.arm(&c.cc, gw, sc.name, func() { _ = st.Close() })
	}
	return st, nil
}

// Iterator is the shape of the streams of openai-go and anthropic-sdk-go
// (ssestream.Stream): Next advances and reports whether there is an item,
// Current returns it, Err the error that stopped Next (nil at a clean end).
type Iterator[T any] interface {
	// Next advances to the next item and reports whether there is one.
	Next() bool
	// Current returns the item Next advanced to.
	Current() T
	// Err returns the error that made Next report false; nil at a clean
	// end of stream.
	Err() error
	// Close releases the stream.
	Close() error
}

// FromIterator adapts an SDK stream to a Streamer for CallStream.
func FromIterator[T any](it Iterator[T]) Streamer[T] { return &iterStream[T]{it: it} }

type iterStream[T any] struct{ it Iterator[T] }

func (s *iterStream[T]) Recv() (T, error) {
	if s.it.Next() {
		return s.it.Current(), nil
	}
	var zero T
	if err := s.it.Err(); err != nil {
		return zero, err
	}
	return zero, io.EOF
}

func (s *iterStream[T]) Close() error { return s.it.Close() }

// endGuard ties a held stream to its call: arm makes the end of the call's
// ctx (the caller's cancellation or deadline, the gateway's Close) close the
// stream; end, run when the stream ends, undoes that. Either may come first,
// from different goroutines.
type endGuard struct {
	mu    sync.Mutex
	ended bool
	stop  func() bool
}

// afterFuncer is a ctx that runs a function when it ends, on the goroutine
// that ends it (the call's ctx does).
type afterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

// arm makes ctx's end run closeStream, unless end came first. closeStream
// runs on the goroutine that ends ctx, or on one of its own: not the
// caller's, who cannot recover a panic of it there. A panic of the
// observer the close reports to is recovered and logged on g's logger,
// redacted with scope's credentials.
func (e *endGuard) arm(ctx context.Context, g *GatewayClient, scope string, closeStream func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return
	}
	closeStream = g.owned(scope, closeStream)
	if a, ok := ctx.(afterFuncer); ok {
		// No goroutine even when ctx ends: closeStream runs as it ends.
		e.stop = a.AfterFunc(closeStream)
		return
	}
	e.stop = context.AfterFunc(ctx, closeStream)
}

func (e *endGuard) end() {
	e.mu.Lock()
	e.ended = true
	stop := e.stop
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// owned returns f, work on a goroutine of pgw's own that reports to the
// observer, with an observer's panic recovered and logged (ownpanic.Run),
// redacted with scope's credentials.
func (g *GatewayClient) owned(scope string, f func()) func() {
	return func() {
		ownpanic.Run(g.log, func(p any) string { return ownpanic.Redact(g.credentials(scope, ""))(p) }, f, scope, "")
	}
}

// errNoTerminalItem cuts a CallStream stream with a TerminalItem that
// reached io.EOF without it; it matches io.ErrUnexpectedEOF.
type errNoTerminalItem struct{}

func (errNoTerminalItem) Error() string {
	return "pgw: the stream ended without its terminal item"
}

func (errNoTerminalItem) Is(target error) bool { return target == io.ErrUnexpectedEOF }

// terminalWatch turns the io.EOF of a stream that has not yet yielded its
// terminal item into errNoTerminalItem.
type terminalWatch[T any] struct {
	inner    Streamer[T]
	terminal func(T) bool
	seen     bool
}

func (w *terminalWatch[T]) Recv() (T, error) {
	it, err := w.inner.Recv()
	if err == nil {
		if w.terminal(it) {
			w.seen = true
		}
		return it, nil
	}
	if errors.Is(err, io.EOF) && !w.seen {
		var zero T
		return zero, errNoTerminalItem{}
	}
	return it, err
}

func (w *terminalWatch[T]) Close() error { return w.inner.Close() }
