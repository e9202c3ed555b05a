package pgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/openai"
)

// rawSSE is an upstream that answers the n-th request (from 0) with the
// raw event-stream bytes body(n) returns, flushed at once; hold, when
// set, then blocks until the client goes away.
type rawSSE struct {
	URL  string
	n    atomic.Int64
	body func(n int) string
	hold func(n int) bool
}

func newRawSSE(t *testing.T, body func(n int) string, hold func(n int) bool) *rawSSE {
	t.Helper()
	u := &rawSSE{body: body, hold: hold}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(u.n.Add(1) - 1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, u.body(n))
		w.(http.Flusher).Flush()
		if u.hold != nil && u.hold(n) {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/v1"
	return u
}

func (u *rawSSE) requests() int { return int(u.n.Load()) }

const (
	chunkHello = `{"choices":[{"index":0,"delta":{"content":"Hello"}}]}`
	chunkStop  = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	chunkUsage = `{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`
)

// drain reads st to its end and returns the text and the ending error.
func drain(st *pgw.Stream) (string, error) {
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if err != nil {
			return b.String(), err
		}
		b.WriteString(ch.Delta)
	}
}

func oneSource(url string, extra ...string) map[string]string {
	env := map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": url,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func TestChatStreamReadsTheEventStreamDialectsUpstreamsSend(t *testing.T) {
	bodies := map[string]string{
		"CRLF line endings":    "data: " + chunkHello + "\r\n\r\n" + "data: " + chunkStop + "\r\n\r\n" + "data: " + chunkUsage + "\r\n\r\n" + "data: [DONE]\r\n\r\n",
		"no space after data:": "data:" + chunkHello + "\n\ndata:" + chunkStop + "\n\ndata:" + chunkUsage + "\n\ndata:[DONE]\n\n",
		"comments, event names, ids": ": ping\n\nevent: message\nid: 1\ndata: " + chunkHello + "\n\n: keep-alive\n\ndata: " + chunkStop + "\n\n" +
			"data: " + chunkUsage + "\n\n" + "data: [DONE]\n\n",
		"one chunk's JSON over several data lines": "data: {\"choices\":[{\"index\":0,\n" + `data: "delta":{"content":"Hello"}}]}` + "\n\n" +
			"data: " + chunkStop + "\n\ndata: " + chunkUsage + "\n\ndata: [DONE]",
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			up := newRawSSE(t, func(int) string { return body }, nil)
			gw, rec := newGateway(t, oneSource(up.URL))
			st, err := gw.ChatStream(context.Background(), hello())
			require.NoError(t, err)
			text, err := drain(st)
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, "Hello", text)
			assert.Equal(t, pgw.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}, st.Usage())
			_, err = st.Recv()
			assert.ErrorIs(t, err, io.EOF, "Recv after the end returns io.EOF again")
			require.NoError(t, st.Close())
			require.NoError(t, st.Close())
			assert.Equal(t, []string{"a:success"}, rec.Outcomes())
			assert.Equal(t, 10, rec.Attempts()[0].Usage.TotalTokens, "the final chunk's usage is the attempt's")
		})
	}
}

func TestChatStreamLineOverTheLimitFailsTheAttempt(t *testing.T) {
	long := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 4<<20) + "\"}}]}\n\n"
	up := newRawSSE(t, func(n int) string {
		if n == 0 {
			return long
		}
		return "data: " + chunkHello + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n"
	}, nil)
	gw, rec := newGateway(t, oneSource(up.URL))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err, "a line over the limit before the first chunk is a failed attempt, retried")
	text, err := drain(st)
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "Hello", text)
	require.NoError(t, st.Close())
	outcomes := rec.Outcomes()
	require.Len(t, outcomes, 2)
	assert.Equal(t, "a:failure", outcomes[0])
	assert.Contains(t, rec.Attempts()[0].Err.Error(), "longer than")
}

func TestChatStreamCutBeforeTheFirstChunkFailsOverAndTellsTheBreaker(t *testing.T) {
	cut := newRawSSE(t, func(int) string { return ": ping\n\n" }, nil)
	good := newRawSSE(t, func(int) string {
		return "data: " + chunkHello + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n"
	}, nil)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":          "CHAT",
		"CHAT__SOURCES":       "cut,good",
		"CHAT__CUT__BASE_URL": cut.URL, "CHAT__CUT__PRIORITY": "0",
		"CHAT__GOOD__BASE_URL": good.URL, "CHAT__GOOD__PRIORITY": "1",
	})
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	text, err := drain(st)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, st.Close())
	assert.Equal(t, "Hello", text)
	assert.Equal(t, "good", st.Source())
	assert.Equal(t, []string{"cut:failure", "good:success"}, rec.Outcomes())
	var sce *openai.StreamCutError
	assert.ErrorAs(t, rec.Attempts()[0].Err, &sce)
}

func TestChatStreamCutOrErrorAfterTheFirstChunkIsReturnedNotRetried(t *testing.T) {
	tests := map[string]string{
		"body ends without [DONE]": "data: " + chunkHello + "\n\n",
		"error event":              "data: " + chunkHello + "\n\n" + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n",
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			up := newRawSSE(t, func(int) string { return body }, nil)
			gw, rec := newGateway(t, oneSource(up.URL))
			st, err := gw.ChatStream(context.Background(), hello())
			require.NoError(t, err)
			text, err := drain(st)
			require.Error(t, err)
			require.NotErrorIs(t, err, io.EOF)
			assert.Equal(t, "Hello", text)
			_, again := st.Recv()
			assert.Equal(t, err, again, "Recv after the cut returns the same error")
			require.NoError(t, st.Close())
			assert.Equal(t, 1, up.requests(), "no retry after the first chunk")
			assert.Equal(t, []string{"a:failure"}, rec.Outcomes())
			assert.Equal(t, []string{pgw.ResultError}, rec.Results())
		})
	}
}

// A stream closed from another goroutine while its Recv blocks was
// abandoned by its caller: it says nothing about the source.
func TestChatStreamClosedWhileRecvBlocksIsAbandonedAndFreesItsSlot(t *testing.T) {
	up := newRawSSE(t, func(n int) string {
		if n%2 == 0 {
			return "data: " + chunkHello + "\n\n"
		}
		return "data: " + chunkHello + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n"
	}, func(n int) bool { return n%2 == 0 })
	gw, rec := newGateway(t, oneSource(up.URL,
		"CHAT__QUOTA_FULL", "fail_fast", "CHAT__A__MAX_IN_FLIGHT", "1", "CHAT__FAILURE_THRESHOLD", "100"))
	ctx := context.Background()
	const rounds = 20
	for range rounds {
		st, err := gw.ChatStream(ctx, hello())
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		recvd := make(chan error, 1)
		go func() {
			_, err := st.Recv()
			recvd <- err
		}()
		time.Sleep(time.Millisecond)
		require.NoError(t, st.Close())
		select {
		case err = <-recvd:
		case <-time.After(10 * time.Second):
			t.Fatal("Recv still blocked after Close")
		}
		require.Error(t, err)
		_, err = gw.Chat(ctx, hello())
		require.NoError(t, err, "the closed stream gave its slot back")
	}
	for i, o := range rec.Outcomes() {
		want := "a:abandoned"
		if i%2 == 1 {
			want = "a:success"
		}
		assert.Equal(t, want, o, "attempt %d", i)
	}
}

func TestChatStreamCanceledWhileRecvBlocksReturnsAndFreesItsSlot(t *testing.T) {
	up := newRawSSE(t, func(n int) string {
		if n == 0 {
			return "data: " + chunkHello + "\n\n"
		}
		return "data: " + chunkHello + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n"
	}, func(n int) bool { return n == 0 })
	gw, rec := newGateway(t, oneSource(up.URL, "CHAT__QUOTA_FULL", "fail_fast", "CHAT__A__MAX_IN_FLIGHT", "1"))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	recvd := make(chan error, 1)
	go func() {
		_, err := st.Recv()
		recvd <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err = <-recvd:
	case <-time.After(10 * time.Second):
		t.Fatal("Recv still blocked after the ctx was cancelled")
	}
	assert.ErrorIs(t, err, context.Canceled)
	_, err = gw.Chat(context.Background(), hello())
	require.NoError(t, err, "the cancelled stream gave its slot back without Close")
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:canceled", "a:success"}, rec.Outcomes())
}

func TestChatStreamTimeoutBoundsTheWholeStream(t *testing.T) {
	up := newRawSSE(t, func(int) string { return "data: " + chunkHello + "\n\n" }, func(int) bool { return true })
	gw, rec := newGateway(t, oneSource(up.URL, "CHAT__A__TIMEOUT_S", "0.3"))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := drain(st)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the source's timeout did not end the stream")
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure"}, rec.Outcomes())
}

// slowCloseStream has one chunk, then a Recv that blocks until Close; Close
// returns only once that Recv has returned, as a transport that drains or
// waits for its reader may.
type slowCloseStream struct {
	sent     bool
	blocked  atomic.Bool
	closed   chan struct{}
	returned chan struct{}
	once     atomic.Bool
}

func newSlowCloseStream() *slowCloseStream {
	return &slowCloseStream{closed: make(chan struct{}), returned: make(chan struct{})}
}

func (s *slowCloseStream) Recv() (pgw.ChatChunk, error) {
	if !s.sent {
		s.sent = true
		return pgw.ChatChunk{Delta: "Hello"}, nil
	}
	s.blocked.Store(true)
	<-s.closed
	defer close(s.returned)
	return pgw.ChatChunk{}, errors.New("fake: read on closed stream")
}

func (s *slowCloseStream) Close() error {
	if s.once.CompareAndSwap(false, true) {
		close(s.closed)
		if !s.blocked.Load() {
			return nil
		}
		select {
		case <-s.returned:
		case <-time.After(10 * time.Second):
		}
		time.Sleep(5 * time.Millisecond) // the Recv's caller goes on
	}
	return nil
}

type slowCloseTransport struct{}

func (slowCloseTransport) ChatStream(context.Context, pgw.Source, pgw.ChatRequest) (pgw.ChatStream, error) {
	return newSlowCloseStream(), nil
}

// The error a blocked Recv gets because its stream is being closed is the
// caller's abandonment, not the source's failure, however the two race.
func TestChatStreamCloseRacingABlockedRecvIsAbandonedNotAFailure(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "a",
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__QUOTA_FULL":        "fail_fast",
		"CHAT__A__MAX_IN_FLIGHT":  "1",
	}, pgw.WithChatTransport(slowCloseTransport{}))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	recvd := make(chan error, 1)
	go func() {
		_, err := st.Recv()
		recvd <- err
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, st.Close())
	require.Error(t, <-recvd)
	assert.Equal(t, []string{"a:abandoned"}, rec.Outcomes())
	assert.Empty(t, rec.Transitions(), "closing a stream never opens the breaker")
	st2, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err, "the closed stream's slot is back once Close returned")
	require.NoError(t, st2.Close())
}

type slowCloseItems struct{ *slowCloseStream }

func (s slowCloseItems) Recv() (string, error) {
	ch, err := s.slowCloseStream.Recv()
	return ch.Delta, err
}

func TestCallStreamCloseRacingABlockedRecvIsAbandonedNotAFailure(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":             "JOB",
		"JOB__SOURCES":           "a",
		"JOB__FAILURE_THRESHOLD": "1",
		"JOB__QUOTA_FULL":        "fail_fast",
		"JOB__A__MAX_IN_FLIGHT":  "1",
	})
	open := func(context.Context, pgw.Source) (pgw.Streamer[string], error) {
		return slowCloseItems{newSlowCloseStream()}, nil
	}
	st, err := pgw.CallStream(context.Background(), gw, "JOB", open)
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	recvd := make(chan error, 1)
	go func() {
		_, err := st.Recv()
		recvd <- err
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, st.Close())
	require.Error(t, <-recvd)
	assert.Equal(t, []string{"a:abandoned"}, rec.Outcomes())
	assert.Empty(t, rec.Transitions(), "closing a stream never opens the breaker")
	st2, err := pgw.CallStream(context.Background(), gw, "JOB", open)
	require.NoError(t, err, "the closed stream's slot is back once Close returned")
	require.NoError(t, st2.Close())
}

// embedServer answers /v1/embeddings with one vector per input ([len]),
// usage = number of inputs; a batch holding "bad" is a 400, one holding
// "slow" waits until the client goes away.
func embedServer(t *testing.T, started chan<- struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		for _, in := range req.Input {
			switch in {
			case "bad":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":"input rejected","type":"invalid_request_error"}}`)
				return
			case "slow":
				if started != nil {
					started <- struct{}{}
				}
				<-r.Context().Done()
				return
			}
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data  []item         `json:"data"`
			Usage map[string]int `json:"usage"`
		}
		for i, in := range req.Input {
			out.Data = append(out.Data, item{Index: i, Embedding: []float32{float32(len(in))}})
		}
		out.Usage = map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func embedEnv(url string) map[string]string {
	return map[string]string{
		"PGW_SCOPES":                   "EMBEDDING",
		"EMBEDDING__SOURCES":           "e",
		"EMBEDDING__E__BASE_URL":       url,
		"EMBEDDING__E__BATCH_SIZE":     "3",
		"EMBEDDING__E__MAX_IN_FLIGHT":  "1",
		"EMBEDDING__FAILURE_THRESHOLD": "100",
	}
}

func TestEmbedPartialFailureNamesTheFailedRangeAndKeepsTheRest(t *testing.T) {
	gw, _ := newGateway(t, embedEnv(embedServer(t, nil)), pgw.WithConcurrency(3))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inputs := []string{"a", "bb", "ccc", "dddd", "bad", "ffffff", "g"}
	resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: inputs})
	var be *pgw.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, len(inputs), be.Total)
	require.Len(t, be.Failed, 1)
	assert.Equal(t, 3, be.Failed[0].Start)
	assert.Equal(t, 6, be.Failed[0].End)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	require.Len(t, resp.Vectors, len(inputs))
	for i, in := range inputs {
		if i >= 3 && i < 6 {
			assert.Nil(t, resp.Vectors[i], "vector %d", i)
			continue
		}
		assert.Equal(t, []float32{float32(len(in))}, resp.Vectors[i], "vector %d", i)
	}
	assert.Equal(t, 4, resp.Usage.TotalTokens, "only the successful sub-batches' usage")

	// Nothing leaked: the only in-flight slot is free.
	resp, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "bb", "ccc", "dddd"}})
	require.NoError(t, err)
	assert.Equal(t, 4, resp.Usage.TotalTokens)
}

func TestEmbedCanceledMidwayReturnsTheCancellationAndLeaksNoPermit(t *testing.T) {
	started := make(chan struct{}, 4)
	gw, _ := newGateway(t, embedEnv(embedServer(t, started)), pgw.WithConcurrency(2))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b", "c", "slow", "e", "f", "g", "h", "i"}})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow sub-batch never started")
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Embed did not return after its ctx was cancelled")
	}
	require.ErrorIs(t, err, context.Canceled)

	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	_, err = gw.Embed(ctx2, pgw.EmbedRequest{Inputs: []string{"a", "b", "c", "d", "e", "f", "g"}})
	require.NoError(t, err, "every sub-batch gave its permit back")
}

const (
	rawAntStart = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\r\n\r\n"
	rawAntPing  = "event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n"
	rawAntText  = "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\r\n\r\n"
	rawAntEnd = "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n" +
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\r\n\r\n" +
		"event: message_stop\r\ndata: {\"type\":\"message_stop\"}"
	rawAntOverloaded = "event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n"
)

func anthropicEnv(urls ...string) map[string]string {
	env := map[string]string{"PGW_SCOPES": "CHAT", "CHAT__FAILURE_THRESHOLD": "100"}
	var names []string
	for i, u := range urls {
		n := string(rune('a' + i))
		names = append(names, n)
		N := strings.ToUpper(n)
		env["CHAT__"+N+"__BASE_URL"] = u
		env["CHAT__"+N+"__PROVIDER"] = "anthropic"
		env["CHAT__"+N+"__MODEL"] = "claude-sonnet-4-5"
		env["CHAT__"+N+"__PRIORITY"] = string(rune('0' + i))
	}
	env["CHAT__SOURCES"] = strings.Join(names, ",")
	return env
}

func TestAnthropicStreamOverCRLFWithPingsAndNoFinalBlankLine(t *testing.T) {
	up := newRawSSE(t, func(int) string { return rawAntPing + rawAntStart + rawAntPing + rawAntText + rawAntPing + rawAntEnd }, nil)
	gw, rec := newGateway(t, anthropicEnv(up.URL))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	text, err := drain(st)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, st.Close())
	assert.Equal(t, "Hello", text)
	assert.Equal(t, pgw.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, st.Usage())
	assert.Zero(t, st.UnknownEvents(), "ping is a known event")
	assert.Equal(t, []string{"a:success"}, rec.Outcomes())
}

func TestAnthropicErrorEventBeforeTheFirstChunkFailsOverAfterItIsReturned(t *testing.T) {
	before := newRawSSE(t, func(int) string { return rawAntStart + rawAntPing + rawAntOverloaded }, nil)
	after := newRawSSE(t, func(int) string { return rawAntStart + rawAntText + rawAntOverloaded }, nil)
	gw, rec := newGateway(t, anthropicEnv(before.URL, after.URL))

	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	text, err := drain(st)
	assert.Equal(t, "Hello", text)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he, "the error event after content reaches the caller")
	assert.Equal(t, 529, he.StatusCode)
	require.NoError(t, st.Close())
	assert.Equal(t, "b", st.Source())
	assert.Equal(t, 1, before.requests())
	assert.Equal(t, 1, after.requests(), "no retry after the first chunk")
	assert.Equal(t, []string{"a:failure", "b:failure"}, rec.Outcomes())
}

func TestAnthropicStreamCutBeforeMessageStopFailsOverBeforeTheFirstChunk(t *testing.T) {
	cut := newRawSSE(t, func(int) string { return rawAntStart + rawAntPing }, nil)
	good := newRawSSE(t, func(int) string { return rawAntStart + rawAntText + rawAntEnd }, nil)
	gw, rec := newGateway(t, anthropicEnv(cut.URL, good.URL))
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "Hello", resp.Content)
	assert.Equal(t, "b", resp.Source)
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
	var sce *anthropic.StreamCutError
	assert.ErrorAs(t, rec.Attempts()[0].Err, &sce)
}
