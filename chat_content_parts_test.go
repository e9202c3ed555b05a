package pgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/openai"
)

// mistralThinkingStream is a chat stream as Mistral's reasoning models send
// it: delta.content is an array of content chunks (thinking chunks holding
// text chunks, text chunks, reference chunks) while the model thinks, then
// plain strings.
var mistralThinkingStream = oaEvents("stop",
	`{"role":"assistant","content":""}`,
	`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"The user wants a greeting."}]}]}`,
	`{"content":[{"type":"thinking","thinking":[{"type":"text","text":" Keep it short."}]}]}`,
	`{"content":[{"type":"text","text":"Hel"}]}`,
	`{"content":[{"type":"text","text":"lo"},{"type":"reference","reference_ids":[0,1]},{"type":"text","text":", "}]}`,
	`{"content":"world"}`,
	`{"content":null}`,
)

func partsGateway(t *testing.T, ws *wireServer) *pgw.GatewayClient {
	t.Helper()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "mistral",
		"CHAT__MISTRAL__BASE_URL": ws.URL,
		"CHAT__MISTRAL__API_KEY":  "mistral-key",
		"CHAT__MISTRAL__MODEL":    "mistral-medium-latest",
	})
	return gw
}

func TestChatStreamAcceptsDeltaContentAsAnArrayOfParts(t *testing.T) {
	ws := newWireServer(t, sseReply(mistralThinkingStream))
	gw := partsGateway(t, ws)
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	defer st.Close()
	var deltas []string
	var last pgw.ChatChunk
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if c.Delta != "" {
			deltas = append(deltas, c.Delta)
		}
		last = c
	}
	assert.Equal(t, []string{"Hel", "lo, ", "world"}, deltas,
		"text parts are the chunk's Delta; thinking and reference parts are not part of the answer")
	assert.NotNil(t, last.Usage)
	assert.Equal(t, 13, st.Usage().TotalTokens)
}

func TestChatCollectsDeltaContentArrays(t *testing.T) {
	ws := newWireServer(t, sseReply(mistralThinkingStream))
	gw := partsGateway(t, ws)
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "Hello, world", resp.Content)
	assert.Equal(t, "stop", resp.FinishReason)
}

// The non-streamed answer of the same model reads the same way.
func TestChatReadsAWholeCompletionWithContentParts(t *testing.T) {
	ws := newWireServer(t, wireReply{status: 200, ctype: "application/json", body: `{"id":"c","object":"chat.completion","model":"mistral-medium-latest",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Greet."}]},{"type":"text","text":"Hello, world"}]},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`})
	gw := partsGateway(t, ws)
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "Hello, world", resp.Content)
}

// strictMistral answers as api.mistral.ai does: a body key it does not know
// is a 422 (its validator forbids extra inputs); otherwise the reasoning
// stream, with usage in the last chunk.
type strictMistral struct{ rejected atomic.Int32 }

func (m *strictMistral) RoundTrip(req *http.Request) (*http.Response, error) {
	var body map[string]json.RawMessage
	_ = json.NewDecoder(req.Body).Decode(&body)
	known := map[string]bool{"model": true, "messages": true, "stream": true, "max_tokens": true, "temperature": true,
		"top_p": true, "stop": true, "random_seed": true, "tools": true, "tool_choice": true, "parallel_tool_calls": true,
		"response_format": true, "presence_penalty": true, "frequency_penalty": true, "n": true, "safe_prompt": true, "prompt_mode": true}
	for k := range body {
		if !known[k] {
			m.rejected.Add(1)
			return &http.Response{StatusCode: http.StatusUnprocessableEntity, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
				Body: io.NopCloser(strings.NewReader(`{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","` + k + `"],"msg":"Extra inputs are not permitted"}]},"type":"invalid_request_error","param":null,"code":null}`))}, nil
		}
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(mistralThinkingStream))}, nil
}

func TestChatStreamOnMistralsAPI(t *testing.T) {
	m := &strictMistral{}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                "CHAT",
		"CHAT__SOURCES":             "mistral",
		"CHAT__MISTRAL__BASE_URL":   "https://api.mistral.ai/v1",
		"CHAT__MISTRAL__API_KEY":    "mistral-key",
		"CHAT__MISTRAL__MODEL":      "magistral-medium-latest",
		"CHAT__MISTRAL__MAX_TOKENS": "2048",
	}, pgw.WithChatTransport(openai.New(openai.WithHTTPClient(&http.Client{Transport: m}))))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err, "Mistral refuses stream_options and max_completion_tokens with a 422")
	var col pgw.Collector
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		col.Add(c)
	}
	require.NoError(t, st.Close())
	assert.Equal(t, "Hello, world", col.Response().Content)
	assert.Equal(t, 13, st.Usage().TotalTokens, "usage comes in Mistral's last chunk unasked")
	assert.Zero(t, m.rejected.Load())
}
