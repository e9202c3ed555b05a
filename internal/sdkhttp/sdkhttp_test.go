package sdkhttp_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/sdkhttp"
)

func events(body string) *sdkhttp.Events {
	return sdkhttp.NewEvents(&http.Response{Body: io.NopCloser(strings.NewReader(body))})
}

func readAll(t *testing.T, e *sdkhttp.Events) ([]sdkhttp.Item, error) {
	t.Helper()
	var out []sdkhttp.Item
	for range 100 {
		it, err := e.Recv()
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
	t.Fatal("no end")
	return nil, nil
}

func TestOpenAIChatStreamEvents(t *testing.T) {
	body := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n" +
		"data: [DONE]\n\n"
	items, err := readAll(t, events(body))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 4)
	assert.False(t, items[0].Content, "a role-only chunk is a preamble")
	assert.True(t, items[1].Content)
	require.NotNil(t, items[2].Usage)
	assert.Equal(t, 4, items[2].Usage.TotalTokens)
	assert.True(t, items[3].Terminal)
	var joined strings.Builder
	for _, it := range items {
		joined.Write(it.Raw)
	}
	assert.Equal(t, body, joined.String(), "the bytes pass through unchanged")
}

// A byte order mark before the first event does not hide it: the event is
// read as content (and its usage as usage), and the bytes pass through.
func TestLeadingByteOrderMarkIsIgnored(t *testing.T) {
	body := "\xEF\xBB\xBFdata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n" +
		"data: [DONE]\n\n"
	items, err := readAll(t, events(body))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 2)
	assert.True(t, items[0].Content)
	require.NotNil(t, items[0].Usage)
	assert.Equal(t, 4, items[0].Usage.TotalTokens)
	assert.True(t, items[1].Terminal)
	assert.Equal(t, body, string(items[0].Raw)+string(items[1].Raw), "the bytes pass through unchanged")

	comment := "\xEF\xBB\xBF: hi\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"
	items, err = readAll(t, events(comment))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 3)
	assert.False(t, items[0].Content, "a comment after the mark is a comment")
	assert.True(t, items[1].Content)
}

func TestAnthropicStreamEvents(t *testing.T) {
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	items, err := readAll(t, events(body))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 6)
	for i := range 3 {
		assert.False(t, items[i].Content, "item %d is a preamble", i)
	}
	assert.True(t, items[3].Content)
	assert.Equal(t, 5, items[0].Usage.PromptTokens)
	assert.Equal(t, 7, items[4].Usage.CompletionTokens)
	assert.True(t, items[5].Terminal)
}

func TestStreamWithoutTerminalEventIsCut(t *testing.T) {
	_, err := readAll(t, events("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"))
	require.ErrorIs(t, err, sdkhttp.ErrNoTerminalEvent)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a cut body, as Go callers check for it")
	assert.Equal(t, sdkhttp.ErrNoTerminalEvent.Error(), err.Error())
}

func TestErrorEventIsAFailureWithItsKind(t *testing.T) {
	items, err := readAll(t, events("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 1)
	var he *errs.HTTPError
	require.True(t, errors.As(items[0].Err, &he))
	assert.Equal(t, 529, he.StatusCode)
	assert.Contains(t, he.Message, "Overloaded")
}

func TestToolCallChunkIsContent(t *testing.T) {
	items, _ := readAll(t, events("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n"))
	require.NotEmpty(t, items)
	assert.True(t, items[0].Content)
}

func TestJSONUsageIsReadFromTheEnd(t *testing.T) {
	u := sdkhttp.JSONUsage([]byte(`{"choices":[{"message":{"content":"say \"usage\""}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`))
	require.NotNil(t, u)
	assert.Equal(t, 5, u.TotalTokens)
	a := sdkhttp.JSONUsage([]byte(`{"content":[],"usage":{"input_tokens":4,"output_tokens":6}}`))
	require.NotNil(t, a)
	assert.Equal(t, 4, a.PromptTokens)
	assert.Equal(t, 6, a.CompletionTokens)
	assert.Nil(t, sdkhttp.JSONUsage([]byte(`{"data":[]}`)))
}

func TestModelIsRewrittenInPlace(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":"model"}], "model" : "sdk-model","stream":true}`)
	start, end, ok := sdkhttp.ModelSpan(body)
	require.True(t, ok)
	assert.Equal(t, `"sdk-model"`, string(body[start:end]))
	assert.Equal(t, `{"messages":[{"role":"user","content":"model"}], "model" : "gpt-x\"","stream":true}`,
		string(sdkhttp.WithModel(body, start, end, `gpt-x"`)))
	_, _, ok = sdkhttp.ModelSpan([]byte(`{"input":"x"}`))
	assert.False(t, ok)
	_, _, ok = sdkhttp.ModelSpan([]byte(`[1,2]`))
	assert.False(t, ok)
}

// An error event that echoes a numeric credential as a number is handed on
// with each data line still JSON, and the credential nowhere.
func TestAnErrorEventWithANumericCredentialStaysJSON(t *testing.T) {
	e := events("event: error\r\ndata: {\"error\":{\"message\":\"account 12345678\",\"account\":12345678}}\r\n\r\n")
	e.Source = config.Source{Name: "a", BaseURL: "https://h.example/v1?account=12345678"}
	it, err := e.Recv()
	require.NoError(t, err)
	require.Error(t, it.Err)
	assert.Equal(t, "event: error\r\ndata: {\"error\":{\"message\":\"account [redacted]\",\"account\":\"[redacted]\"}}\r\n\r\n", string(it.Raw))
	assert.NotContains(t, it.Err.Error(), "12345678")
}
