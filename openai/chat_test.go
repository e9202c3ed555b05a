package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

func TestChatStreamDeliversEachChunkBeforeTheNextIsSent(t *testing.T) {
	u := testutil.NewUpstream(t)
	release := make(chan struct{})
	u.Enqueue(testutil.Chat, testutil.Reply{
		Chunks: []string{"Hel", "lo", " world"},
		// The server holds chunk 1 until the client has chunk 0: a client
		// that buffered the body would never see chunk 0 and time out.
		BeforeChunk: func(ctx context.Context, i int) {
			if i == 1 {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		},
	})
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), hello())
	require.NoError(t, err)

	first, err := st.Recv()
	require.NoError(t, err, "first chunk must arrive while the server holds the second")
	assert.Equal(t, "Hel", first.Delta)
	close(release)

	rest, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, "lo world", text(rest))
}

func TestChatStreamRequestIsStreamingWithUsageAndBearer(t *testing.T) {
	u := testutil.NewUpstream(t)
	temp := 0.25
	req := hello()
	req.MaxTokens = 64
	req.Temperature = &temp
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), req)
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)

	got := u.LastRequest(testutil.Chat)
	assert.Equal(t, "/v1/chat/completions", got.Path)
	assert.Equal(t, "Bearer "+testKey, u.LastAuthorization())
	var body map[string]any
	require.NoError(t, json.Unmarshal(got.Body, &body))
	assert.Equal(t, true, body["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
	assert.Equal(t, "fake-model", body["model"], "an empty request model is the source's")
	assert.Equal(t, float64(64), body["max_tokens"])
	assert.Equal(t, 0.25, body["temperature"])
	assert.Equal(t, []any{map[string]any{"role": "user", "content": "say hello"}}, body["messages"])
}

func TestChatStreamRequestModelOverridesSourceModel(t *testing.T) {
	u := testutil.NewUpstream(t)
	req := hello()
	req.Model = "other-model"
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), req)
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, "other-model", u.LastRequest(testutil.Chat).Model)
}

func TestChatStreamUsageComesFromTheFinalChunk(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"a", "b"}, Usage: &testutil.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}})
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), hello())
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)

	require.Len(t, chunks, 4, "two text chunks, the finish chunk, the usage chunk; the role-only chunk is skipped")
	assert.Equal(t, "ab", text(chunks))
	assert.Equal(t, "stop", chunks[2].FinishReason)
	for _, c := range chunks[:3] {
		assert.Nil(t, c.Usage)
	}
	require.NotNil(t, chunks[3].Usage)
	assert.Equal(t, transport.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}, *chunks[3].Usage)
}

func TestChatStreamSlowFirstTokenHitsTheCallersDeadline(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Hour})
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	st, err := openai.New().ChatStream(ctx, sourceFor(u), hello())
	require.NoError(t, err, "the headers come at once; only the first token is late")
	defer st.Close()

	_, err = st.Recv()
	assert.Equal(t, context.DeadlineExceeded, err, "the ctx error is returned as is")
	_, err = st.Recv()
	assert.Equal(t, context.DeadlineExceeded, err, "the terminal error sticks")
}

func TestChatStreamCancelledMidStreamReturnsCanceled(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Chat, testutil.Reply{
		Chunks: []string{"a", "b"},
		BeforeChunk: func(ctx context.Context, i int) {
			if i == 1 {
				<-ctx.Done() // never sent: the client cancels first
			}
		},
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	st, err := openai.New().ChatStream(ctx, sourceFor(u), hello())
	require.NoError(t, err)
	defer st.Close()
	c, err := st.Recv()
	require.NoError(t, err)
	assert.Equal(t, "a", c.Delta)
	cancel()
	_, err = st.Recv()
	assert.Equal(t, context.Canceled, err)
}

func TestChatStreamCutMidAnswerIsStreamCutError(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"one ", "two ", "three"}, Cut: true, CutAfter: 2})
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), hello())
	require.NoError(t, err)
	chunks, err := collect(t, st)

	assert.Equal(t, "one two ", text(chunks))
	require.Error(t, err, "a cut must never look like a clean io.EOF")
	assert.NotErrorIs(t, err, io.EOF)
	assert.ErrorIs(t, err, openai.ErrStreamCut)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var cut *openai.StreamCutError
	require.ErrorAs(t, err, &cut)
	assert.Equal(t, "fake-1", cut.Source)
	assert.Equal(t, 2, cut.Chunks)
	assert.ErrorIs(t, cut.Err, io.ErrUnexpectedEOF, "the fake drops the connection inside the chunked body")
	assert.NotErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
}

// rawSSE serves body verbatim as an event stream.
func rawSSE(t *testing.T, body string) transport.Source {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return transport.Source{Name: "raw", BaseURL: srv.URL + "/v1"}
}

func TestChatStreamEndings(t *testing.T) {
	const a = `data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}` + "\n\n"
	const stop = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	tests := []struct {
		name    string
		body    string
		text    string
		wantCut bool
	}{
		{name: "done ends cleanly", body: a + stop + "data: [DONE]\n\n", text: "a"},
		{name: "body ending before any finish is a cut", body: a, text: "a", wantCut: true},
		{name: "empty body is a cut", body: "", wantCut: true},
		{name: "body ending after finish_reason without done is complete", body: a + stop, text: "a"},
		{name: "half an event at the end is dropped and a cut", body: a + `data: {"choices":[{"index":0,"del`, text: "a", wantCut: true},
		{name: "done without the final blank line", body: a + stop + "data: [DONE]", text: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := openai.New().ChatStream(testCtx(t), rawSSE(t, tt.body), hello())
			require.NoError(t, err)
			chunks, err := collect(t, st)
			assert.Equal(t, tt.text, text(chunks))
			if tt.wantCut {
				assert.ErrorIs(t, err, openai.ErrStreamCut)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestChatStreamErrorEventIsUpstreamError(t *testing.T) {
	src := rawSSE(t, `data: {"error":{"message":"model overloaded","type":"server_error","code":null}}`+"\n\n")
	st, err := openai.New().ChatStream(testCtx(t), src, hello())
	require.NoError(t, err)
	_, err = collect(t, st)
	var ue *openai.UpstreamError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "model overloaded (server_error)", ue.Message)
	assert.Equal(t, http.StatusInternalServerError, ue.StatusCode, "an unknown error: a failure")
}

// An error event or a 200 body's error is classed as the same error sent as
// the status its code or type stands for, as the gateway's http client
// classes it: a refused key is fatal, not a failure to retry.
func TestUpstreamErrorIsClassedByTheStatusItStandsFor(t *testing.T) {
	for obj, want := range map[string]struct {
		status int
		class  retry.Class
	}{
		`{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}`: {401, retry.Fatal},
		`{"message":"no","type":"permission_error"}`:                                              {403, retry.Fatal},
		`{"message":"slow down","code":"rate_limit_exceeded"}`:                                    {429, retry.Throttle},
		`{"message":"bad","type":"invalid_request_error"}`:                                        {400, retry.CallerError},
		`{"message":"busy","type":"server_error"}`:                                                {500, retry.Failure},
		`{"message":"out","type":"insufficient_quota","code":"insufficient_quota"}`:               {500, retry.Fatal},
	} {
		st, err := openai.New().ChatStream(testCtx(t), rawSSE(t, "data: {\"error\":"+obj+"}\n\n"), hello())
		require.NoError(t, err)
		_, err = collect(t, st)
		var ue *openai.UpstreamError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, want.status, ue.StatusCode, obj)
		assert.Equal(t, want.class, retry.Classify(err), obj)
	}
}

func TestChatStreamNonStreamedAnswerIsOneChunk(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`)
	}))
	defer srv.Close()
	st, err := openai.New().ChatStream(testCtx(t), transport.Source{Name: "json", BaseURL: srv.URL + "/v1/"}, hello())
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	require.Len(t, chunks, 1)
	assert.Equal(t, "whole answer", chunks[0].Delta)
	assert.Equal(t, "stop", chunks[0].FinishReason)
	assert.Equal(t, &transport.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, chunks[0].Usage)
}

func TestChatStreamCloseUnblocksRecv(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Hour})
	st, err := openai.New().ChatStream(testCtx(t), sourceFor(u), hello())
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := st.Recv()
		errc <- err
	}()
	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "Close is idempotent")
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.NotErrorIs(t, err, io.EOF)
	case <-time.After(testTimeout):
		t.Fatal("Recv still blocked after Close")
	}
}

func TestChatStreamConnectionRefusedIsAnOrdinaryError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := openai.New().ChatStream(testCtx(t), transport.Source{Name: "gone", BaseURL: url + "/v1"}, hello())
	require.Error(t, err)
	var he *transport.HTTPError
	assert.False(t, errors.As(err, &he))
	assert.NotErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), `source "gone"`)
}
