package pgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// callSignal is a recorder that also hands every call's result to a
// channel, so that a test can wait for a call's end without sleeping.
type callSignal struct {
	*recorder
	ended chan pgw.CallResult
}

func newCallSignal() *callSignal {
	return &callSignal{recorder: newRecorder(), ended: make(chan pgw.CallResult, 64)}
}

func (o *callSignal) ObserveCall(c pgw.CallResult) {
	o.recorder.ObserveCall(c)
	o.ended <- c
}

// next returns the next call's result, failing the test when none comes.
func (o *callSignal) next(t *testing.T, what string) pgw.CallResult {
	t.Helper()
	select {
	case c := <-o.ended:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no call ended within 10s (results so far: %v)", what, o.Results())
		return pgw.CallResult{}
	}
}

// A ChatStream whose ctx is cancelled while nobody reads or closes it gives
// its source's in-flight slot back by itself, as Released: the next call is
// admitted, the breaker counts nothing, and a later Recv says why the
// stream ended.
func TestChatStreamWhoseCtxEndsUnreadGivesItsAdmissionBack(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"a", "b"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done() // the stream stays open after its first chunk
		}
	}})
	obs := newCallSignal()
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES":          "a",
		"CHAT__A__BASE_URL":      up.URL,
		"CHAT__A__MAX_IN_FLIGHT": "1",
		"CHAT__QUOTA_FULL":       "fail_fast", // a slot still taken fails the next call at once
	}, pgw.WithObserver(obs))

	gone := errors.New("the caller went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	cancel(gone) // neither read nor closed

	end := obs.next(t, "the abandoned stream")
	assert.Equal(t, pgw.ResultCanceled, end.Result)
	assert.Equal(t, []string{"a:" + pgw.OutcomeCanceled}, obs.Outcomes())

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err, "the cancelled stream still holds the only in-flight slot")
	assert.NotEmpty(t, resp.Content)
	snap, err := gw.Snapshot(context.Background(), "CHAT", "a")
	require.NoError(t, err)
	assert.Zero(t, snap.ConsecutiveFailures, "a cancelled stream says nothing against its source")
	assert.Equal(t, pgw.StateClosed, snap.State)

	// The chunk read while opening is still delivered; then the cause.
	ch, err := st.Recv()
	require.NoError(t, err)
	assert.NotEmpty(t, ch.Delta)
	_, err = st.Recv()
	assert.ErrorIs(t, err, gone)
	_, err = st.Recv()
	assert.ErrorIs(t, err, gone, "and every later Recv")
	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "Close stays idempotent")
}

// ctxChat is a chat transport whose streams send "hi", then — unless eof —
// wait for their ctx or Close. With block, a stream sends nothing: it waits
// from the start, after a signal on entered. closes counts Close calls.
type ctxChat struct {
	eof, block bool
	entered    chan struct{}
	closes     atomic.Int32
}

func (c *ctxChat) ChatStream(ctx context.Context, _ pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	s := &ctxChatStream{c: c, ctx: ctx, closed: make(chan struct{}), sent: c.block}
	if c.block {
		c.entered <- struct{}{}
	}
	return s, nil
}

type ctxChatStream struct {
	c      *ctxChat
	ctx    context.Context
	sent   bool
	once   sync.Once
	closed chan struct{}
}

func (s *ctxChatStream) Recv() (pgw.ChatChunk, error) {
	if !s.sent {
		s.sent = true
		return pgw.ChatChunk{Delta: "hi"}, nil
	}
	if s.c.eof {
		return pgw.ChatChunk{}, io.EOF
	}
	select {
	case <-s.ctx.Done():
		return pgw.ChatChunk{}, s.ctx.Err()
	case <-s.closed:
		return pgw.ChatChunk{}, errors.New("stream closed")
	}
}

func (s *ctxChatStream) Close() error {
	s.c.closes.Add(1)
	s.once.Do(func() { close(s.closed) })
	return nil
}

// A stream read to io.EOF is done with its ctx: the hook that closes a
// stream when its ctx ends is gone, so the call's own end does not close
// the stream behind the caller's back, and neither does a cancellation
// that comes later.
func TestChatStreamReadToEOFLeavesNoCtxHookBehind(t *testing.T) {
	tr := &ctxChat{eof: true}
	gw, rec := newGateway(t, map[string]string{"CHAT__SOURCES": "a"}, pgw.WithChatTransport(tr))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	_, err = st.Recv()
	require.ErrorIs(t, err, io.EOF)
	cancel()
	assert.Zero(t, tr.closes.Load(), "the stream was closed for a ctx that no longer bounds it")
	assert.Equal(t, []string{pgw.ResultSuccess}, rec.Results())
	require.NoError(t, st.Close())
}

// Chat streams ended every way — cancelled unread, read to the end, closed
// early — leave no goroutine behind while the gateway stays open: nothing
// watches a stream's ctx beyond the stream.
func TestChatStreamsLeaveNoGoroutineBehind(t *testing.T) {
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	held, whole := &ctxChat{}, &ctxChat{eof: true}
	obs := newCallSignal()
	heldGW, _ := newGateway(t, map[string]string{"CHAT__SOURCES": "a"}, pgw.WithChatTransport(held), pgw.WithObserver(obs))
	wholeGW, _ := newGateway(t, map[string]string{"CHAT__SOURCES": "a"}, pgw.WithChatTransport(whole))
	base := settle()
	const each = 4 // more than the slack below, so one goroutine per stream shows
	for range each {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := heldGW.ChatStream(ctx, hello())
		require.NoError(t, err)
		cancel()
		assert.Equal(t, pgw.ResultCanceled, obs.next(t, "a cancelled stream").Result)

		st, err := wholeGW.ChatStream(context.Background(), hello())
		require.NoError(t, err)
		for err == nil {
			_, err = st.Recv()
		}
		require.ErrorIs(t, err, io.EOF)

		st, err = heldGW.ChatStream(context.Background(), hello())
		require.NoError(t, err)
		require.NoError(t, st.Close())
		assert.Equal(t, pgw.ResultAbandoned, obs.next(t, "a closed stream").Result)
	}
	require.Eventually(t, func() bool { return settle() <= base+2 }, 5*time.Second, 10*time.Millisecond,
		"goroutines: %d at the start, %d now", base, runtime.NumGoroutine())
}

// blockingEmbed and blockingOCR signal on entered, then wait for their ctx.
type blockingEmbed struct{ entered chan struct{} }

func (b blockingEmbed) Embed(ctx context.Context, _ pgw.Source, _ pgw.EmbedRequest) (pgw.EmbedResponse, error) {
	b.entered <- struct{}{}
	<-ctx.Done()
	return pgw.EmbedResponse{}, ctx.Err()
}

type blockingOCR struct{ entered chan struct{} }

func (b blockingOCR) OCR(ctx context.Context, _ pgw.Source, _ pgw.OCRRequest) (pgw.OCRResponse, error) {
	b.entered <- struct{}{}
	<-ctx.Done()
	return pgw.OCRResponse{}, ctx.Err()
}

// Every kind of call that the gateway's Close interrupts — mid-attempt, or
// a stream held after its first item — returns ErrClosed and is reported as
// closed, its attempt too: not as the caller's cancellation.
func TestCallsCloseInterruptsAreReportedClosed(t *testing.T) {
	entered := make(chan struct{}, 16)
	sdkURL, _ := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	})
	chat := &ctxChat{block: true, entered: entered}
	heldChat := &ctxChat{}
	obs := newCallSignal()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":         "CHAT,EMBEDDING,OCR,RUN,SDK",
		"CHAT__SOURCES":      "a",
		"EMBEDDING__SOURCES": "a",
		"OCR__SOURCES":       "a",
		"RUN__SOURCES":       "a",
		"SDK__SOURCES":       "a",
		"SDK__A__BASE_URL":   sdkURL,
	}, pgw.WithObserver(obs), pgw.WithChatTransport(switchChat{blocking: chat, held: heldChat}),
		pgw.WithEmbedTransport(blockingEmbed{entered}), pgw.WithOCRTransport(blockingOCR{entered}))
	ctx := context.Background()

	// A chat stream past its first chunk, held.
	held, err := gw.ChatStream(withHeld(ctx), hello())
	require.NoError(t, err)
	_, err = held.Recv()
	require.NoError(t, err)

	faces := map[string]func() error{
		"Chat":       func() error { _, err := gw.Chat(ctx, hello()); return err },
		"ChatStream": func() error { _, err := gw.ChatStream(ctx, hello()); return err },
		"Embed": func() error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
			return err
		},
		"OCR": func() error { _, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)}); return err },
		"Call": func() error {
			_, err := pgw.Call(ctx, gw, "RUN", func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
				entered <- struct{}{}
				<-ctx.Done()
				return 0, pgw.Usage{}, ctx.Err()
			})
			return err
		},
		"CallStream": func() error {
			_, err := pgw.CallStream(ctx, gw, "RUN", func(ctx context.Context, _ pgw.Source) (pgw.Streamer[string], error) {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			})
			return err
		},
		"HTTPClient": func() error {
			_, err := gw.HTTPClient("SDK").Post(pgw.SDKBaseURL+"chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			return err
		},
	}
	errsOf := make(map[string]chan error, len(faces))
	for name, f := range faces {
		ch := make(chan error, 1)
		errsOf[name] = ch
		go func() { ch <- f() }()
	}
	for range faces {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("not every call reached its attempt")
		}
	}
	require.NoError(t, gw.Close())
	for name, ch := range errsOf {
		assert.ErrorIs(t, <-ch, pgw.ErrClosed, name)
	}
	_, err = held.Recv()
	assert.ErrorIs(t, err, pgw.ErrClosed, "the held ChatStream")
	require.NoError(t, held.Close())

	calls := obs.Calls()
	require.Len(t, calls, len(faces)+1)
	for _, c := range calls {
		assert.Equal(t, pgw.ResultClosed, c.Result, c.Scope)
		assert.ErrorIs(t, c.Err, pgw.ErrClosed, c.Scope)
	}
	for _, a := range obs.Attempts() {
		assert.Equal(t, pgw.OutcomeClosed, a.Outcome, a.Scope)
	}
}

// A call the caller cancels is still reported as canceled, attempt and
// call, also once the gateway has closed since.
func TestACallersCancellationIsReportedCanceledNotClosed(t *testing.T) {
	obs := newCallSignal()
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "RUN", "RUN__SOURCES": "a"}, pgw.WithObserver(obs))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := pgw.Call(ctx, gw, "RUN", func(actx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
		cancel()
		<-actx.Done()
		return 0, pgw.Usage{}, actx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, gw.Close())
	assert.Equal(t, []string{pgw.ResultCanceled}, obs.Results())
	assert.Equal(t, []string{"a:" + pgw.OutcomeCanceled}, obs.Outcomes())
}

// switchChat serves a ctx marked withHeld from held, every other from
// blocking.
type switchChat struct{ blocking, held *ctxChat }

type heldKey struct{}

func withHeld(ctx context.Context) context.Context { return context.WithValue(ctx, heldKey{}, true) }

func (s switchChat) ChatStream(ctx context.Context, src pgw.Source, req pgw.ChatRequest) (pgw.ChatStream, error) {
	if ctx.Value(heldKey{}) != nil {
		return s.held.ChatStream(ctx, src, req)
	}
	return s.blocking.ChatStream(ctx, src, req)
}
