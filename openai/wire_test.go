package openai_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// golden reads a file of testdata/.
func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// recorder is an upstream that records the request and answers with a
// fixed body of the given content type.
type recorder struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
}

func (r *recorder) serve(t *testing.T, contentType string, answer []byte) transport.Source {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.body, r.header = b, req.Header.Clone()
		r.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return transport.Source{Name: "oa", BaseURL: srv.URL + "/v1", APIKey: config.NewSecret(testKey), Model: "gpt-4o-mini"}
}

func (r *recorder) sent() ([]byte, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body, r.header
}

func ptr[T any](v T) *T { return &v }

var weatherSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"city": map[string]any{"type": "string"}},
	"required":             []string{"city"},
	"additionalProperties": false,
}

func toolRequest() transport.ChatRequest {
	return transport.ChatRequest{
		Messages: []transport.Message{
			{Role: "system", Content: "You are a weather assistant."},
			{Role: "user", Parts: []transport.ContentPart{
				transport.TextPart("What is the weather where this photo was taken?"),
				transport.ImagePart("data:image/png;base64,iVBORw0KGgo=", "low"),
			}},
			{Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "call_abc123", Type: "function",
				Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
			{Role: "tool", ToolCallID: "call_abc123", Content: `{"temp_c":18}`},
		},
		MaxTokens:   256,
		Temperature: ptr(0.2),
		TopP:        ptr(0.9),
		Stop:        []string{"END"},
		Seed:        ptr(42),
		Tools: []transport.Tool{{Type: "function", Function: transport.FunctionDefinition{
			Name: "get_weather", Description: "Current weather of a city", Parameters: weatherSchema, Strict: true,
		}}},
		ToolChoice:        transport.ToolChoiceAuto,
		ParallelToolCalls: ptr(false),
		User:              "user-1234",
		Extra:             map[string]any{"logprobs": true},
	}
}

func TestChatRequestWireFormatWithToolsImagesAndToolResults(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_parallel_tool_calls.sse"))
	st, err := openai.New().ChatStream(testCtx(t), src, toolRequest())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	body, h := rec.sent()
	assert.JSONEq(t, string(golden(t, "chat_tools_request.json")), string(body))
	assert.Equal(t, "Bearer "+testKey, h.Get("Authorization"))
}

func TestChatRequestWireFormatJSONSchemaAndNamedToolChoice(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_refusal.sse"))
	req := transport.ChatRequest{
		Messages:   []transport.Message{{Role: "user", Content: "Name a city and its country."}},
		Tools:      []transport.Tool{transport.FunctionTool("get_weather", "", map[string]any{"type": "object", "properties": map[string]any{}})},
		ToolChoice: transport.ToolChoiceFunction{Name: "get_weather"},
		ResponseFormat: &transport.ResponseFormat{Type: transport.FormatJSONSchema, JSONSchema: &transport.JSONSchema{
			Name:   "city",
			Schema: `{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"],"additionalProperties":false}`,
			Strict: true,
		}},
	}
	st, err := openai.New().ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	body, _ := rec.sent()
	assert.JSONEq(t, string(golden(t, "chat_json_schema_request.json")), string(body))
}

func TestChatStreamParallelToolCallArgumentsAcrossChunks(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_parallel_tool_calls.sse"))
	st, err := openai.New().ChatStream(testCtx(t), src, toolRequest())
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	assert.True(t, chunks[0].HasContent(), "the role-only event is skipped: the first chunk is the first tool-call piece")
	var col transport.Collector
	for _, ch := range chunks {
		col.Add(ch)
	}
	resp := col.Response()
	assert.Equal(t, []transport.ToolCall{
		{ID: "call_paris", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}},
		{ID: "call_tokyo", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Tokyo"}`}},
	}, resp.ToolCalls)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, transport.Usage{PromptTokens: 82, CompletionTokens: 36, TotalTokens: 118, CachedPromptTokens: 64, ReasoningTokens: 12}, resp.Usage)
}

func TestChatStreamRefusal(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_refusal.sse"))
	st, err := openai.New().ChatStream(testCtx(t), src, hello())
	require.NoError(t, err)
	chunks, err := collect(t, st)
	require.NoError(t, err)
	var col transport.Collector
	for _, ch := range chunks {
		col.Add(ch)
	}
	resp := col.Response()
	assert.Equal(t, "I'm sorry, I can't help with that.", resp.Refusal)
	assert.Empty(t, resp.Content)
	assert.Equal(t, "stop", resp.FinishReason)
}

func TestChatCollectedCompletionKeepsMalformedToolArgumentsAsReceived(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "application/json", golden(t, "completion_tool_calls.json"))
	st, err := openai.New().ChatStream(testCtx(t), src, hello())
	require.NoError(t, err)
	resp := collected(t, st)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, `{"city":"Paris"}`, resp.ToolCalls[0].Function.Arguments)
	assert.Equal(t, `{"city":"Tok`, resp.ToolCalls[1].Function.Arguments, "malformed arguments are the model's text, returned as received")
	assert.Equal(t, 70, resp.Usage.TotalTokens)
}

func TestChatExtraThatNamesAModelledFieldIsAnErrorBeforeSending(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_refusal.sse"))
	req := hello()
	req.Extra = map[string]any{"temperature": 1.5}
	c := openai.New()
	require.Error(t, c.ValidateChat(src, req))
	_, err := c.ChatStream(testCtx(t), src, req)
	var re *transport.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Extra[temperature]", re.Field)
	assert.Equal(t, "oa", re.Source)
	body, _ := rec.sent()
	assert.Nil(t, body, "nothing was sent")
}

func TestAzureSourceSendsAPIKeyHeaderAndKeepsTheQuery(t *testing.T) {
	var rec recorder
	var gotURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gotURL = req.URL.String()
		rec.mu.Lock()
		rec.header = req.Header.Clone()
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(golden(t, "stream_refusal.sse"))
	}))
	t.Cleanup(srv.Close)
	src := transport.Source{Name: "az", BaseURL: srv.URL + "/openai/deployments/d1?api-version=2024-10-21",
		APIKey: config.NewSecret(testKey), Provider: config.ProviderAzure}
	st, err := openai.New().ChatStream(testCtx(t), src, hello())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	_, h := rec.sent()
	assert.Equal(t, testKey, h.Get("Api-Key"))
	assert.Empty(t, h.Get("Authorization"))
	assert.Equal(t, "/openai/deployments/d1/chat/completions?api-version=2024-10-21", gotURL)
}

func TestChatStreamReportsTheResponseToTheSink(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_refusal.sse"))
	var statuses []int
	ctx := transport.WithResponseSink(testCtx(t), func(status int, _ http.Header) { statuses = append(statuses, status) })
	st, err := openai.New().ChatStream(ctx, src, hello())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []int{200}, statuses)
}

// Some OpenAI-compatible servers send tool-call pieces without "index": a
// piece with a new ID starts the next call, one without an ID continues the
// last, as if each had carried its index.
func TestChatStreamToolCallsWithoutIndexAreToldApartByID(t *testing.T) {
	var rec recorder
	src := rec.serve(t, "text/event-stream", golden(t, "stream_tool_calls_without_index.sse"))
	st, err := openai.New().ChatStream(testCtx(t), src, toolRequest())
	require.NoError(t, err)
	assert.Equal(t, []transport.ToolCall{
		{ID: "call_paris", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}},
		{ID: "call_tokyo", Type: "function", Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city": "Tokyo"}`}},
		{ID: "call_rome", Type: "function", Function: transport.FunctionCall{Name: "get_time", Arguments: `{}`}},
	}, collected(t, st).ToolCalls)
}

// collected reads st to its end and returns the answer its chunks make up.
func collected(t *testing.T, st transport.ChatStream) transport.ChatResponse {
	t.Helper()
	chunks, err := collect(t, st)
	require.NoError(t, err)
	var col transport.Collector
	for _, ch := range chunks {
		col.Add(ch)
	}
	return col.Response()
}
