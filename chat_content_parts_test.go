package pgw_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
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
