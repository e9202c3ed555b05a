package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// ctxStream yields its items, then blocks until its ctx ends (returning
// the ctx's cause) or it is closed: a stream tied to the attempt's ctx, as
// CallStream asks.
type ctxStream struct {
	ctx    context.Context
	items  []string
	closed chan struct{}
	once   atomic.Bool
}

func newCtxStream(ctx context.Context, items ...string) *ctxStream {
	return &ctxStream{ctx: ctx, items: items, closed: make(chan struct{})}
}

func (s *ctxStream) Recv() (string, error) {
	if len(s.items) > 0 {
		it := s.items[0]
		s.items = s.items[1:]
		return it, nil
	}
	select {
	case <-s.ctx.Done():
		return "", context.Cause(s.ctx)
	case <-s.closed:
		return "", errors.New("stream closed")
	}
}

func (s *ctxStream) Close() error {
	if s.once.CompareAndSwap(false, true) {
		close(s.closed)
	}
	return nil
}

// stallingObserver holds the first ObserveAttempt after arm until release
// is closed, so that a stream's end is caught half-way.
type stallingObserver struct {
	*recorder
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (o *stallingObserver) ObserveAttempt(a pgw.AttemptRecord) {
	if o.armed.CompareAndSwap(true, false) {
		close(o.entered)
		<-o.release
	}
	o.recorder.ObserveAttempt(a)
}

// TestStreamCloseAfterCancelReturnsOnlyOnceTheAdmissionIsBack: when the
// caller's cancellation starts ending a held stream, the caller's own
// Close must not return before that end has given the source's admission
// back, or a call made right after it finds the in-flight slot still taken.
func TestStreamCloseAfterCancelReturnsOnlyOnceTheAdmissionIsBack(t *testing.T) {
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":            "GEN",
		"GEN__SOURCES":          "a",
		"GEN__QUOTA_FULL":       "fail_fast",
		"GEN__A__MAX_IN_FLIGHT": "1",
	})
	require.NoError(t, err)
	obs := &stallingObserver{recorder: newRecorder(), entered: make(chan struct{}), release: make(chan struct{})}
	gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(obs), fastBackoff)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pgw.CallStream(ctx, gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return newCtxStream(actx, "x"), nil
	})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)

	obs.armed.Store(true)
	cancel() // the gateway starts ending the stream on its own
	<-obs.entered
	go func() {
		time.Sleep(50 * time.Millisecond) // let a Close that does not wait return first
		close(obs.release)
	}()
	require.NoError(t, st.Close())

	next, err := pgw.CallStream(context.Background(), gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return newCtxStream(actx, "y"), nil
	})
	require.NoError(t, err, "Close returned while the slot was still held")
	require.NoError(t, next.Close())
}

// TestCallStreamCallerCancelEndsTheStreamAsReleased: the caller's
// cancellation ends a held stream with context.Canceled and says nothing
// against the source.
func TestCallStreamCallerCancelEndsTheStreamAsReleased(t *testing.T) {
	gw, rec := streamScope(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pgw.CallStream(ctx, gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return newCtxStream(actx, "x"), nil
	})
	require.NoError(t, err)
	it, err := st.Recv()
	require.NoError(t, err)
	assert.Equal(t, "x", it)
	cancel()
	_, err = st.Recv()
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, st.Close())
	assert.False(t, st.Held())
	require.Len(t, rec.Outcomes(), 1)
	assert.NotEqual(t, "a:failure", rec.Outcomes()[0])
	snap, err := gw.Snapshot(context.Background(), "GEN", "a")
	require.NoError(t, err)
	assert.Zero(t, snap.ConsecutiveFailures)
}

// TestCallStreamAttemptTimeoutBoundsTheStream: the source's TIMEOUT_S
// bounds the stream after its first item too, and the cut is the source's
// failure.
func TestCallStreamAttemptTimeoutBoundsTheStream(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "GEN", "GEN__SOURCES": "a", "GEN__A__TIMEOUT_S": "0.05"})
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return newCtxStream(actx, "x"), nil
	})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	_, err = st.Recv()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure"}, rec.Outcomes())
}

// TestCallStreamClassifiesSDKErrorsFromOpen: an SDK error carrying a 429
// and its Retry-After holds the source off and fails over; one carrying a
// 401 opens the breaker; one carrying a 400 is returned at once.
func TestCallStreamClassifiesSDKErrorsFromOpen(t *testing.T) {
	sdkErr := func(status int, h http.Header) error {
		return &fakeSDKError{StatusCode: status, Response: &http.Response{StatusCode: status, Header: h}}
	}
	t.Run("429", func(t *testing.T) {
		gw, rec := streamScope(t)
		st, err := pgw.CallStream(context.Background(), gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
			if src.Name == "a" {
				return nil, sdkErr(429, http.Header{"Retry-After": {"30"}})
			}
			return newCtxStream(actx, "x"), nil
		})
		require.NoError(t, err)
		assert.Equal(t, "b", st.Source())
		require.NoError(t, st.Close())
		assert.Equal(t, "a:throttle", rec.Outcomes()[0])
		adm, err := gw.Admission("GEN")
		require.NoError(t, err)
		assert.Greater(t, adm.Memo().Remaining("a", time.Now()), 20*time.Second)
	})
	t.Run("401", func(t *testing.T) {
		gw, rec := streamScope(t)
		st, err := pgw.CallStream(context.Background(), gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
			if src.Name == "a" {
				return nil, sdkErr(401, http.Header{})
			}
			return newCtxStream(actx, "x"), nil
		})
		require.NoError(t, err)
		require.NoError(t, st.Close())
		assert.Equal(t, "a:fatal", rec.Outcomes()[0])
		snap, err := gw.Snapshot(context.Background(), "GEN", "a")
		require.NoError(t, err)
		assert.Equal(t, pgw.StateOpen, snap.State)
	})
	t.Run("400", func(t *testing.T) {
		gw, rec := streamScope(t)
		_, err := pgw.CallStream(context.Background(), gw, "GEN", func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
			return nil, sdkErr(400, http.Header{})
		})
		var fe *fakeSDKError
		require.ErrorAs(t, err, &fe, "the SDK's own error comes back")
		assert.Equal(t, []string{"a:caller_error"}, rec.Outcomes())
	})
}

// TestStreamsLeaveNoGoroutineBehind: governed streams ended every way
// (read to the end, closed early, cancelled, cut by Close of the gateway)
// through CallStream and the governed http client leave no goroutine once
// the gateway is closed.
func TestStreamsLeaveNoGoroutineBehind(t *testing.T) {
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	drain := func(st *pgw.ItemStream[string]) error {
		for {
			if _, err := st.Recv(); err != nil {
				return err
			}
		}
	}
	base := settle()
	func() {
		url, _ := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		s, err := config.FromMap(map[string]string{"PGW_SCOPES": "GEN,CHAT", "GEN__SOURCES": "a", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": url})
		require.NoError(t, err)
		gw, err := pgw.New(context.Background(), *s)
		require.NoError(t, err)
		open := func(actx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
			return newCtxStream(actx, "x"), nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancelled, err := pgw.CallStream(ctx, gw, "GEN", open)
		require.NoError(t, err)
		early, err := pgw.CallStream(context.Background(), gw, "GEN", open)
		require.NoError(t, err)
		require.NoError(t, early.Close())
		left, err := pgw.CallStream(context.Background(), gw, "GEN", open)
		require.NoError(t, err)
		resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		t.Cleanup(func() { _ = resp.Body.Close() })
		cancel()
		require.ErrorIs(t, drain(cancelled), context.Canceled)
		require.NoError(t, cancelled.Close())
		require.NoError(t, gw.Close())
		require.Error(t, drain(left))
		require.NoError(t, left.Close())
		_, err = io.ReadAll(resp.Body)
		require.Error(t, err)
		require.NoError(t, resp.Body.Close())
	}()
	require.Eventually(t, func() bool { return settle() <= base+2 }, 5*time.Second, 10*time.Millisecond,
		"goroutines: %d at the start, %d now", base, runtime.NumGoroutine())
}

// closeOnlyStream is a Streamer that does not watch its ctx: once its items
// are out, Recv waits for Close and then reports its own error.
type closeOnlyStream struct {
	items  []string
	closed chan struct{}
	once   sync.Once
}

func (s *closeOnlyStream) Recv() (string, error) {
	if len(s.items) > 0 {
		it := s.items[0]
		s.items = s.items[1:]
		return it, nil
	}
	<-s.closed
	return "", errors.New("stream closed")
}

func (s *closeOnlyStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// The caller's cancellation closes a held stream; what the caller's Recv
// then hears is its cancellation, whatever the inner stream answered as it
// was closed.
func TestCallStreamCallerCancelIsWhatRecvReportsWhateverTheInnerStreamSays(t *testing.T) {
	gw, rec := streamScope(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pgw.CallStream(ctx, gw, "GEN", func(context.Context, pgw.Source) (pgw.Streamer[string], error) {
		return &closeOnlyStream{items: []string{"x"}, closed: make(chan struct{})}, nil
	})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	cancel()
	_, err = st.Recv()
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, st.Close())
	require.Len(t, rec.Outcomes(), 1)
	assert.NotEqual(t, "a:failure", rec.Outcomes()[0])
}
