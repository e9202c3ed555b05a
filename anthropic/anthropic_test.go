package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

const testKey = "sk-ant-test-0123456789"

func golden(t *testing.T, name string) []byte {
	t.Helper()
	return mustRead(t, name)
}

func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	return b
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// upstream records the request and answers with status, headers and body.
type upstream struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
	path   string
}

func (u *upstream) serve(t *testing.T, status int, h map[string]string, answer []byte) transport.Source {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.body, u.header, u.path = b, r.Header.Clone(), r.URL.Path
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for k, v := range h {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return transport.Source{Name: "claude", BaseURL: srv.URL + "/v1", APIKey: config.NewSecret(testKey),
		Model: "claude-sonnet-4-5", Provider: config.ProviderAnthropic}
}

func (u *upstream) sent() ([]byte, http.Header, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.body, u.header, u.path
}

func collect(t *testing.T, st transport.ChatStream) ([]transport.ChatChunk, error) {
	t.Helper()
	defer st.Close()
	var out []transport.ChatChunk
	for {
		ch, err := st.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ch)
	}
}

func response(chunks []transport.ChatChunk) transport.ChatResponse {
	var c transport.Collector
	for _, ch := range chunks {
		c.Add(ch)
	}
	return c.Response()
}

func ptr[T any](v T) *T { return &v }

func toolRequest() transport.ChatRequest {
	return transport.ChatRequest{
		Messages: []transport.Message{
			{Role: "system", Content: "You are a weather assistant."},
			{Role: "user", Parts: []transport.ContentPart{
				transport.TextPart("What is the weather where this photo was taken?"),
				transport.ImagePart("data:image/png;base64,iVBORw0KGgo=", ""),
				transport.ImagePart("https://example.com/street.jpg", "auto"),
			}},
			{Role: "assistant", Content: "Let me check.", ToolCalls: []transport.ToolCall{{ID: "call_abc123", Type: "function",
				Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
			{Role: "tool", ToolCallID: "call_abc123", Content: `{"temp_c":18}`},
		},
		MaxTokens:   256,
		Temperature: ptr(0.2),
		Stop:        []string{"END"},
		Tools: []transport.Tool{transport.FunctionTool("get_weather", "Current weather of a city", map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []string{"city"}, "additionalProperties": false,
		})},
		ToolChoice:        transport.ToolChoiceAuto,
		ParallelToolCalls: ptr(false),
		User:              "user-1234",
		Extra:             map[string]any{"top_k": 40},
	}
}

func TestMessagesRequestWireFormat(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_text_and_tool_use.sse"))
	st, err := anthropic.New().ChatStream(testCtx(t), src, toolRequest())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	body, h, path := u.sent()
	assert.JSONEq(t, string(golden(t, "messages_tools_request.json")), string(body))
	assert.Equal(t, "/v1/messages", path)
	assert.Equal(t, testKey, h.Get("X-Api-Key"))
	assert.Equal(t, "2023-06-01", h.Get("Anthropic-Version"))
	assert.Empty(t, h.Get("Authorization"))
}

func TestStreamTextAndParallelToolUseBecomeChatChunks(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_text_and_tool_use.sse"))
	st, err := anthropic.New().ChatStream(testCtx(t), src, toolRequest())
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, "Okay, let me check ", chunks[0].Delta, "message_start and the empty text block start give no chunk")
	resp := response(chunks)
	assert.Equal(t, "Okay, let me check both cities.", resp.Content)
	assert.Equal(t, []transport.ToolCall{
		{ID: "toolu_01", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}},
		{ID: "toolu_02", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Tokyo"}`}},
	}, resp.ToolCalls)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, transport.Usage{PromptTokens: 572, CompletionTokens: 89, TotalTokens: 661, CachedPromptTokens: 100}, resp.Usage)
	assert.Equal(t, 1, st.(*anthropic.Stream).UnknownEvents(), "the unknown event type is skipped and counted")
}

func TestJSONSchemaAnswerIsServedByAForcedToolAndReturnedAsContent(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_json_answer.sse"))
	req := transport.ChatRequest{
		Messages: []transport.Message{{Role: "user", Content: "Name a city and its country."}},
		ResponseFormat: &transport.ResponseFormat{Type: transport.FormatJSONSchema, JSONSchema: &transport.JSONSchema{
			Name:   "city",
			Schema: `{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"]}`,
		}},
	}
	st, err := anthropic.New().ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	body, _, _ := u.sent()
	assert.JSONEq(t, string(golden(t, "messages_json_schema_request.json")), string(body))
	resp := response(chunks)
	assert.JSONEq(t, `{"city":"Lyon","country":"France"}`, resp.Content)
	assert.Empty(t, resp.ToolCalls)
	assert.Equal(t, "stop", resp.FinishReason)
}

func TestStreamWithoutMessageStopIsCut(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_cut.sse"))
	st, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.Len(t, chunks, 1)
	var cut *anthropic.StreamCutError
	require.ErrorAs(t, err, &cut, "a body that ends before message_stop is an error, not io.EOF")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, retry.Failure, retry.Classify(err))
}

func TestOverloadedErrorEventIsAFailure(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_overloaded.sse"))
	st, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	_, err = collect(t, st)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 529, he.StatusCode)
	assert.Equal(t, retry.Failure, retry.Classify(err))
}

func TestStatus529OverloadedFailsOverAnd429HonoursRetryAfter(t *testing.T) {
	var u upstream
	src := u.serve(t, 529, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	_, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 529, he.StatusCode)
	assert.Contains(t, he.Message, "overloaded_error")
	assert.Equal(t, retry.Failure, retry.Classify(err))

	var u2 upstream
	src = u2.serve(t, 429, map[string]string{"Content-Type": "application/json", "Retry-After": "7"},
		[]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`))
	_, err = anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 7*time.Second, he.RetryAfter)
	assert.Equal(t, retry.Throttle, retry.Classify(err))
}

func TestFieldsTheMessagesAPICannotExpressAreErrorsNamingFieldAndSource(t *testing.T) {
	src := transport.Source{Name: "claude", BaseURL: "http://127.0.0.1:1/v1", Provider: config.ProviderAnthropic}
	user := []transport.Message{{Role: "user", Content: "hi"}}
	cases := []struct {
		name  string
		req   transport.ChatRequest
		field string
	}{
		{"seed", transport.ChatRequest{Messages: user, Seed: ptr(1)}, "Seed"},
		{"temperature above 1", transport.ChatRequest{Messages: user, Temperature: ptr(1.5)}, "Temperature"},
		{"temperature and top_p", transport.ChatRequest{Messages: user, Temperature: ptr(0.2), TopP: ptr(0.9)}, "TopP"},
		{"strict tool", transport.ChatRequest{Messages: user, Tools: []transport.Tool{{Function: transport.FunctionDefinition{Name: "f", Strict: true}}}}, "Tools[0].Function.Strict"},
		{"image detail", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart("https://x/y.png", "high")}}}}, "Messages[0].Parts[0].ImageURL.Detail"},
		{"message name", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi", Name: "bob"}}}, "Messages[0].Name"},
		{"extra names a written key", transport.ChatRequest{Messages: user, Extra: map[string]any{"system": "x"}}, "Extra[system]"},
		{"tool arguments not an object", transport.ChatRequest{Messages: []transport.Message{{Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "c", Function: transport.FunctionCall{Name: "f", Arguments: `{"a":`}}}}}}, "Messages[0].ToolCalls[0].Function.Arguments"},
		{"tool call without tools", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}, {Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "c", Function: transport.FunctionCall{Name: "f", Arguments: `{}`}}}}, {Role: "tool", ToolCallID: "c", Content: "1"}}}, "Tools"},
		{"tool result without tools, tool choice none", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}, {Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "c", Function: transport.FunctionCall{Name: "f", Arguments: `{}`}}}}, {Role: "tool", ToolCallID: "c", Content: "1"}}, ToolChoice: transport.ToolChoiceNone}, "Tools"},
		{"json format with tools", transport.ChatRequest{Messages: user, Tools: []transport.Tool{transport.FunctionTool("f", "", nil)}, ResponseFormat: &transport.ResponseFormat{Type: transport.FormatJSONObject}}, "ResponseFormat"},

		{"empty user message", transport.ChatRequest{Messages: []transport.Message{{Role: "user"}}}, "Messages[0].Content"},
		{"empty assistant turn between user turns", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}, {Role: "assistant"}, {Role: "user", Content: "again"}}}, "Messages[1].Content"},
		{"whitespace-only message", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: " \n"}}}, "Messages[0].Content"},
		{"whitespace-only parts", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.TextPart(" ")}}}}, "Messages[0].Parts"},
		{"empty text part", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.TextPart("look"), transport.TextPart("")}}}}, "Messages[0].Parts[1].Text"},
		{"only a system message", transport.ChatRequest{Messages: []transport.Message{{Role: "system", Content: "Be brief."}}}, "Messages"},
	}
	c := anthropic.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.ValidateChat(src, tc.req)
			var re *transport.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.field, re.Field)
			assert.Equal(t, "claude", re.Source)
			assert.Contains(t, err.Error(), `source "claude"`)
			_, err = c.ChatStream(context.Background(), src, tc.req)
			assert.True(t, errors.As(err, &re), "ChatStream refuses it before sending")
		})
	}
}

// The Messages API takes an empty final assistant turn (as content "", never
// null), and an empty message merged into a turn of its role that has
// content is no empty turn.
func TestEmptyFinalAssistantTurnIsSentAsEmptyContent(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_json_answer.sse"))
	st, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{
		{Role: "user"}, {Role: "user", Content: "hi"}, {Role: "assistant"},
	}})
	require.NoError(t, err)
	_, _ = collect(t, st)
	body, _, _ := u.sent()
	var sent struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &sent))
	require.Len(t, sent.Messages, 2)
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "hi"}}, sent.Messages[0]["content"])
	assert.Equal(t, map[string]any{"role": "assistant", "content": ""}, sent.Messages[1])
	assert.NotContains(t, string(body), "null")
}

func TestMaxTokensDefaultsToTheSourceThenTheDocumentedDefault(t *testing.T) {
	var u upstream
	src := u.serve(t, 200, nil, golden(t, "stream_json_answer.sse"))
	req := transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}}
	st, err := anthropic.New().ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	_, _ = collect(t, st)
	body, _, _ := u.sent()
	assert.Contains(t, string(body), `"max_tokens":4096`)

	src.MaxTokens = 1000
	st, err = anthropic.New().ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	_, _ = collect(t, st)
	body, _, _ = u.sent()
	assert.Contains(t, string(body), `"max_tokens":1000`)
}

func TestMalformedToolInputIsReturnedAsReceived(t *testing.T) {
	var u upstream
	sse := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_x\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": [1,\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	src := u.serve(t, 200, nil, []byte(sse))
	st, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	resp := response(chunks)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, `{"a": [1,`, resp.ToolCalls[0].Function.Arguments)
	assert.Equal(t, 8, resp.Usage.TotalTokens)
}

func TestStreamEndingAfterTheStopReasonWithoutMessageStopIsWhole(t *testing.T) {
	var u upstream
	sse := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"done\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
	src := u.serve(t, 200, nil, []byte(sse))
	st, err := anthropic.New().ChatStream(testCtx(t), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err, "the stop reason is a terminal event")
	assert.Equal(t, "done", response(chunks).Content)
}

// Tool conversations the Messages API takes pass ValidateChat: calls split
// over consecutive assistant messages, their results in any order followed
// by user text in the same turn, a system message between, and a final
// assistant message that asks for tools.
func TestToolConversationsTheMessagesAPITakesAreSent(t *testing.T) {
	src := transport.Source{Name: "claude", BaseURL: "http://127.0.0.1:1/v1", Provider: config.ProviderAnthropic}
	call := func(id string) transport.ToolCall {
		return transport.ToolCall{ID: id, Function: transport.FunctionCall{Name: "f", Arguments: `{"a":1}`}}
	}
	tools := []transport.Tool{transport.FunctionTool("f", "", nil)}
	for name, msgs := range map[string][]transport.Message{
		"calls over two assistant messages, results reordered, then user text": {
			{Role: "user", Content: "hi"},
			{Role: "assistant", Content: "Looking.", ToolCalls: []transport.ToolCall{call("c1")}},
			{Role: "assistant", ToolCalls: []transport.ToolCall{call("c2")}},
			{Role: "tool", ToolCallID: "c2", Content: "2"},
			{Role: "system", Content: "Be brief."},
			{Role: "tool", ToolCallID: "c1", Content: "1"},
			{Role: "user", Content: "and?"},
		},
		"an empty user message before the results": {
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []transport.ToolCall{call("c1")}},
			{Role: "user"},
			{Role: "tool", ToolCallID: "c1", Content: "1"},
		},
		"a final assistant message that asks for a tool": {
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []transport.ToolCall{call("c1")}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, anthropic.New().ValidateChat(src, transport.ChatRequest{Messages: msgs, Tools: tools}))
		})
	}
}

// The request's model is the one sent; the source's stands in only for a
// request that names none.
func TestChatStreamSendsTheRequestsModel(t *testing.T) {
	var u upstream
	src := u.serve(t, http.StatusOK, nil, golden(t, "stream_text_and_tool_use.sse"))
	c := anthropic.New()
	st, err := c.ChatStream(testCtx(t), src, transport.ChatRequest{Model: "claude-haiku-4-5", Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	body, _, _ := u.sent()
	var sent map[string]any
	require.NoError(t, json.Unmarshal(body, &sent))
	assert.Equal(t, "claude-haiku-4-5", sent["model"])
}

// A base64 image of a media type the Messages API does not take is refused
// naming the part; the four it takes are sent, their media type as the API
// spells it.
func TestImageMediaTypesTheMessagesAPITakes(t *testing.T) {
	src := transport.Source{Name: "claude", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Provider: config.ProviderAnthropic}
	req := func(url string) transport.ChatRequest {
		return transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart(url, "")}}}}
	}
	for _, mt := range []string{"image/jpeg", "image/png", "image/gif", "image/webp", "IMAGE/PNG", "image/jpg"} {
		assert.NoError(t, anthropic.New().ValidateChat(src, req("data:"+mt+";base64,AAAA")), mt)
	}
	for _, mt := range []string{"image/bmp", "image/svg+xml", "application/octet-stream", "text/plain"} {
		err := anthropic.New().ValidateChat(src, req("data:"+mt+";base64,AAAA"))
		var re *transport.RequestError
		require.ErrorAs(t, err, &re, mt)
		assert.Equal(t, "Messages[0].Parts[0].ImageURL.URL", re.Field)
		assert.Contains(t, re.Problem, "image/jpeg, image/png, image/gif, image/webp")
	}
}

// A data: URI may carry parameters after its media type (RFC 2397:
// data:image/png;name=a.png;base64,…): the image is sent with the media
// type alone, as the API takes it, and is not refused.
func TestImageMediaTypeParametersAreNotSent(t *testing.T) {
	var u upstream
	src := u.serve(t, http.StatusOK, nil, golden(t, "stream_text_and_tool_use.sse"))
	url := "data:image/PNG;name=a.png;base64,AAAA"
	req := transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart(url, "")}}}}
	require.NoError(t, anthropic.New().ValidateChat(src, req))
	st, err := anthropic.New().ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	body, _, _ := u.sent()
	var sent struct {
		Messages []struct {
			Content []struct {
				Source struct {
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &sent), string(body))
	require.Len(t, sent.Messages, 1)
	require.Len(t, sent.Messages[0].Content, 1)
	assert.Equal(t, "image/png", sent.Messages[0].Content[0].Source.MediaType)
	assert.Equal(t, "AAAA", sent.Messages[0].Content[0].Source.Data)
}
