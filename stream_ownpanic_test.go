package pgw_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// endPanicObserver panics, once armed, on the first attempt end it hears of.
type endPanicObserver struct {
	pgw.ObserverFuncs
	armed atomic.Bool
}

func (o *endPanicObserver) ObserveAttempt(pgw.AttemptRecord) {
	if o.armed.CompareAndSwap(true, false) {
		panic("observer bug, key sk-secret-4")
	}
}

// blockingItems is a CallStream upstream: one item, then nothing until its
// ctx ends.
type blockingItems struct {
	ctx    context.Context
	sent   bool
	closed atomic.Bool
}

func (b *blockingItems) Recv() (string, error) {
	if !b.sent {
		b.sent = true
		return "hi", nil
	}
	<-b.ctx.Done()
	return "", b.ctx.Err()
}

func (b *blockingItems) Close() error { b.closed.Store(true); return nil }

// A stream whose ctx ends is closed by a hook that runs on a goroutine of
// the ctx's own (the caller is not reading it): an observer that panics on
// the attempt end that close reports does not end the process. The panic is
// logged without the source's key, and the stream's call ends all the same:
// its admission is back and the gateway's Close returns. Each scenario runs
// in a child process: before the fix the panic killed it.
func TestStreamCtxEndObserverPanicIsRecovered(t *testing.T) {
	for _, kind := range []string{"chat", "callstream", "http"} {
		t.Run(kind, func(t *testing.T) {
			testutil.InChild(t, func(t *testing.T) {
				up := testutil.NewUpstream(t)
				upGone := make(chan struct{})
				up.SetDefault(testutil.Chat, testutil.Reply{BeforeChunk: func(ctx context.Context, i int) {
					if i == 1 {
						<-ctx.Done()
						close(upGone)
					}
				}})
				s, err := config.FromMap(map[string]string{
					"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__A__API_KEY": "sk-secret-4",
					"CHAT__A__MAX_IN_FLIGHT": "1", "CHAT__A__BASE_URL": up.URL,
				})
				require.NoError(t, err)
				var logs syncBuffer
				obs := &endPanicObserver{}
				chat := &ctxChat{}
				opts := []pgw.Option{pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), pgw.WithObserver(obs)}
				if kind != "http" {
					opts = append(opts, pgw.WithChatTransport(chat))
				}
				gw, err := pgw.New(context.Background(), *s, opts...)
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				closed := func() bool { return chat.closes.Load() > 0 }
				switch kind {
				case "chat":
					st, err := gw.ChatStream(ctx, hello())
					require.NoError(t, err)
					_, err = st.Recv()
					require.NoError(t, err)
				case "callstream":
					items := &blockingItems{}
					st, err := pgw.CallStream(ctx, gw, "CHAT", func(ctx context.Context, _ pgw.Source) (pgw.Streamer[string], error) {
						items.ctx = ctx
						return items, nil
					})
					require.NoError(t, err)
					require.True(t, st.Held())
					closed = items.closed.Load
				case "http":
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions",
						strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
					require.NoError(t, err)
					resp, err := gw.HTTPClient("CHAT").Do(req)
					require.NoError(t, err)
					defer resp.Body.Close()
					closed = func() bool {
						select {
						case <-upGone:
							return true
						default:
							return false
						}
					}
				}
				obs.armed.Store(true)
				cancel() // the hook closes the stream, off the caller's goroutine
				// The hook's goroutine logs the panic once it unwound.
				require.Eventually(t, func() bool {
					return closed() && strings.Contains(logs.String(), "an observer panicked on a goroutine of pgw's own")
				}, 10*time.Second, time.Millisecond)
				adm, err := gw.Admission("CHAT")
				require.NoError(t, err)
				require.Eventually(t, func() bool { return adm.Latency().InFlight("a") == 0 }, 10*time.Second, time.Millisecond,
					"the stream's attempt is given back")
				done := make(chan error, 1)
				go func() { done <- gw.Close() }()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(10 * time.Second):
					t.Fatal("Close waits for the stream whose close the observer's panic cut")
				}
				assert.Contains(t, logs.String(), "scope=CHAT")
				assert.Contains(t, logs.String(), "observer bug")
				assert.NotContains(t, logs.String(), "sk-secret-4", "the panic is logged redacted")
			})
		})
	}
}
