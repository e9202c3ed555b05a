package pgw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// twoProviders is a CHAT scope with an OpenAI-compatible primary "oa" and
// an Anthropic backup "claude" on the same fake upstream.
func twoProviders(t *testing.T, up *testutil.Upstream) *pgw.GatewayClient {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":               "CHAT",
		"CHAT__SOURCES":            "oa,claude",
		"CHAT__OA__BASE_URL":       up.URL,
		"CHAT__OA__API_KEY":        "sk-oa",
		"CHAT__OA__MODEL":          "gpt-4o-mini",
		"CHAT__CLAUDE__BASE_URL":   up.URL,
		"CHAT__CLAUDE__API_KEY":    "sk-ant",
		"CHAT__CLAUDE__MODEL":      "claude-sonnet-4-5",
		"CHAT__CLAUDE__PROVIDER":   "anthropic",
		"CHAT__CLAUDE__PRIORITY":   "1",
		"CHAT__CLAUDE__MAX_TOKENS": "512",
	})
	return gw
}

var weatherTool = pgw.FunctionTool("get_weather", "Current weather of a city", map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
})

func TestToolRoundTripFailsOverFromOpenAIToAnthropicWithToolsIntact(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw := twoProviders(t, up)
	ctx := context.Background()
	req := pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "Weather in Paris?"}},
		Tools:    []pgw.Tool{weatherTool},
	}
	up.Enqueue(testutil.Chat, testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
	first, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "oa", first.Source)
	assert.Equal(t, "tool_calls", first.FinishReason)
	require.Equal(t, []pgw.ToolCall{{ID: "call_1", Type: "function", Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, first.ToolCalls)

	// The primary fails on the second turn: the backup, another provider,
	// gets the whole conversation, tool call and result included.
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusInternalServerError})
	up.Enqueue(testutil.Messages, testutil.Reply{Text: "It is 18 °C in Paris."})
	req.Messages = append(req.Messages,
		pgw.Message{Role: pgw.RoleAssistant, ToolCalls: first.ToolCalls},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "call_1", Content: `{"temp_c":18}`})
	second, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "claude", second.Source)
	assert.Equal(t, "It is 18 °C in Paris.", second.Content)
	assert.Equal(t, "stop", second.FinishReason)

	sent := up.LastRequest(testutil.Messages)
	assert.Equal(t, "sk-ant", sent.APIKey)
	var body struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools []map[string]any `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(sent.Body, &body))
	assert.Equal(t, 512, body.MaxTokens, "the source's MAX_TOKENS")
	require.Len(t, body.Messages, 3)
	assert.Equal(t, "tool_use", body.Messages[1].Content[0]["type"])
	assert.Equal(t, map[string]any{"city": "Paris"}, body.Messages[1].Content[0]["input"])
	assert.Equal(t, "tool_result", body.Messages[2].Content[0]["type"])
	assert.Equal(t, "call_1", body.Messages[2].Content[0]["tool_use_id"])
	require.Len(t, body.Tools, 1)
	assert.Equal(t, "get_weather", body.Tools[0]["name"])
}

func TestChatStreamToolCallFromTheAnthropicBackup(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw := twoProviders(t, up)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: 529})
	up.Enqueue(testutil.Messages, testutil.Reply{ToolCalls: []testutil.ToolCall{
		{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "toolu_2", Name: "get_weather", Arguments: `{"city":"Tokyo"}`},
	}})
	st, err := gw.ChatStream(context.Background(), pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "Weather in Paris and Tokyo?"}},
		Tools:    []pgw.Tool{weatherTool},
	})
	require.NoError(t, err)
	defer st.Close()
	var col pgw.Collector
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		col.Add(ch)
	}
	resp := col.Response()
	assert.Equal(t, "claude", st.Source())
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, `{"city":"Tokyo"}`, resp.ToolCalls[1].Function.Arguments)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Positive(t, resp.Usage.TotalTokens)
}

func TestChatCutStreamFailsOverAndDeliversOnlyTheWholeAnswer(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw := twoProviders(t, up)
	up.Enqueue(testutil.Chat, testutil.Reply{Text: "one two three four", Cut: true, CutAfter: 2})
	up.Enqueue(testutil.Messages, testutil.Reply{Text: "whole answer"})
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err, "a cut stream is a failed attempt of the collected call, not its end")
	assert.Equal(t, "whole answer", resp.Content)
	assert.Equal(t, "claude", resp.Source)
}

func TestImagePromptAndJSONSchemaOnTheAnthropicTransport(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw := twoProviders(t, up)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG(t))
	up.Enqueue(testutil.OCR, testutil.Reply{Status: http.StatusServiceUnavailable})
	up.Enqueue(testutil.Messages, testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "toolu_9", Name: "scene", Arguments: `{"color":"grey"}`}}})
	resp, err := gw.Chat(context.Background(), pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleUser, Parts: []pgw.ContentPart{pgw.TextPart("Main color?"), pgw.ImagePart(png, "")}}},
		ResponseFormat: &pgw.ResponseFormat{Type: pgw.FormatJSONSchema, JSONSchema: &pgw.JSONSchema{
			Name: "scene", Schema: map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}},
		}},
	})
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)
	assert.JSONEq(t, `{"color":"grey"}`, resp.Content, "the forced tool's input is the JSON answer")
	assert.Empty(t, resp.ToolCalls)
	assert.Contains(t, string(up.LastRequest(testutil.Messages).Body), `"type":"base64"`)
}

func TestRequestABackupCannotCarryFailsBeforeAnyAttempt(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw := twoProviders(t, up)
	seed := 7
	_, err := gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello().Messages, Seed: &seed})
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Seed", re.Field)
	assert.Equal(t, "claude", re.Source)
	assert.Equal(t, config.ProviderAnthropic, re.Provider)
	assert.Zero(t, up.TotalRequests(), "not even the primary, which could carry it, is asked")
}

// A backup on Mistral's own API, which refuses a User with a 422: the call
// fails before any attempt, as for any field a fail-over target cannot
// carry; a Seed goes there as random_seed and fails nothing.
func TestRequestAMistralBackupCannotCarryFailsBeforeAnyAttempt(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "oa,mistral",
		"CHAT__OA__BASE_URL":      up.URL,
		"CHAT__OA__API_KEY":       "sk-oa",
		"CHAT__MISTRAL__BASE_URL": "https://api.mistral.ai/v1",
		"CHAT__MISTRAL__API_KEY":  "sk-mi",
		"CHAT__MISTRAL__PRIORITY": "1",
	})
	_, err := gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello().Messages, User: "user-1234"})
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "User", re.Field)
	assert.Equal(t, "mistral", re.Source)
	assert.Zero(t, up.TotalRequests(), "not even the primary, which could carry it, is asked")

	seed := 7
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello().Messages, Seed: &seed})
	require.NoError(t, err, "the primary answers; a Seed is no problem for the backup")
	assert.Equal(t, 1, up.TotalRequests())
}

func TestAnthropicSourceInAnEmbeddingScopeIsAConfigError(t *testing.T) {
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":                  "EMBEDDING",
		"EMBEDDING__SOURCES":          "claude",
		"EMBEDDING__CLAUDE__BASE_URL": "http://127.0.0.1:1/v1",
		"EMBEDDING__CLAUDE__PROVIDER": "anthropic",
	})
	require.NoError(t, err)
	_, err = pgw.New(context.Background(), *s)
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "EMBEDDING__CLAUDE__PROVIDER")
}

func TestCallDemotesASourceThatFailedInThisCall(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                "RERANK",
		"RERANK__SOURCES":           "a,b",
		"RERANK__B__PRIORITY":       "1",
		"RERANK__FAILURE_THRESHOLD": "100", // the breaker stays closed: only demotion moves the call
	})
	var seen []string
	v, err := pgw.Call(context.Background(), gw, "RERANK", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
		seen = append(seen, src.Name)
		if src.Name == "a" {
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: 503, Message: "down"}
		}
		return "ok", pgw.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"a", "b"}, seen, "the backup is asked at once, not the failing primary again")
}

func TestOCRFailsOverToAnAnthropicSource(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "OCR",
		"OCR__SOURCES":          "oa,claude",
		"OCR__OA__BASE_URL":     up.URL,
		"OCR__CLAUDE__BASE_URL": up.URL,
		"OCR__CLAUDE__PROVIDER": "anthropic",
		"OCR__CLAUDE__MODEL":    "claude-sonnet-4-5",
		"OCR__CLAUDE__PRIORITY": "1",
	})
	up.Enqueue(testutil.OCR, testutil.Reply{Status: http.StatusServiceUnavailable})
	up.Enqueue(testutil.Messages, testutil.Reply{Text: "INVOICE 42"})
	resp, err := gw.OCR(context.Background(), pgw.OCRRequest{Image: tinyPNG(t)})
	require.NoError(t, err)
	assert.Equal(t, "INVOICE 42", resp.Text)
	assert.Contains(t, string(up.LastRequest(testutil.Messages).Body), `"media_type":"image/png"`)
	assert.Positive(t, resp.Usage.TotalTokens)
}

func TestUnknownEventTypesAreSkippedAndCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"+
			"event: brand_new\ndata: {\"type\":\"brand_new\"}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "c",
		"CHAT__C__BASE_URL": srv.URL + "/v1",
		"CHAT__C__PROVIDER": "anthropic",
		"CHAT__C__MODEL":    "claude-sonnet-4-5",
	})
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	defer st.Close()
	var text string
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "an unknown event type is not fatal")
		text += ch.Delta
	}
	assert.Equal(t, "hi", text)
	assert.Equal(t, 1, st.UnknownEvents())
}
