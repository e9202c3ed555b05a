package pgw_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// A tool called without arguments may come back from an OpenAI-compatible
// server with empty argument text. Sent back in the history, the OpenAI
// wire carries that text as it is, and the Anthropic wire sends the empty
// object as the tool_use input (as it does for whitespace), so the
// conversation fails over between them.
func TestToolCallWithEmptyArgumentsIsSentToAnthropicAsAnEmptyObject(t *testing.T) {
	oa := newWireServer(t, sseReply(oaEvents("tool_calls",
		`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_n","type":"function","function":{"name":"now","arguments":""}}]}`,
		`{"tool_calls":[{"index":1,"id":"call_w","type":"function","function":{"name":"now","arguments":"  "}}]}`)))
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "It is noon.")...)))
	gw := mixedScope(t, oa, claude)
	ctx := context.Background()
	req := pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "What time is it?"}},
		Tools:    []pgw.Tool{pgw.FunctionTool("now", "The current time", nil)},
	}

	first, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "oa", first.Source)
	require.Len(t, first.ToolCalls, 2)
	assert.Equal(t, "", first.ToolCalls[0].Function.Arguments, "the model's text, as received")
	assert.Equal(t, "  ", first.ToolCalls[1].Function.Arguments)

	req.Messages = append(req.Messages,
		pgw.Message{Role: pgw.RoleAssistant, ToolCalls: first.ToolCalls},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "call_n", Content: "12:00"},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "call_w", Content: "12:00"})

	// The OpenAI wire: the argument text as it came.
	oa.script(sseReply(oaEvents("stop", `{"role":"assistant","content":"It is noon."}`)))
	second, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "oa", second.Source)
	var oaBody struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct {
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	oa.last(t, &oaBody)
	require.Len(t, oaBody.Messages, 4)
	require.Len(t, oaBody.Messages[1].ToolCalls, 2)
	require.NotNil(t, oaBody.Messages[1].ToolCalls[0].Function.Arguments)
	assert.Equal(t, "", *oaBody.Messages[1].ToolCalls[0].Function.Arguments)
	assert.Equal(t, "  ", *oaBody.Messages[1].ToolCalls[1].Function.Arguments)

	// The Anthropic wire: the empty object.
	oa.script(unavailable)
	third, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "claude", third.Source)
	var antBody struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	claude.last(t, &antBody)
	require.Len(t, antBody.Messages, 3)
	require.Len(t, antBody.Messages[1].Content, 2)
	assert.JSONEq(t, `{"type":"tool_use","id":"call_n","name":"now","input":{}}`, string(antBody.Messages[1].Content[0]))
	assert.JSONEq(t, `{"type":"tool_use","id":"call_w","name":"now","input":{}}`, string(antBody.Messages[1].Content[1]))
}

// An embedding input of whitespace is text the embeddings API takes: it is
// sent as it is; only the empty string is refused before admission.
func TestEmbedSendsAWhitespaceInput(t *testing.T) {
	emb := newWireServer(t, wireReply{status: 200, ctype: "application/json",
		body: `{"data":[{"index":0,"embedding":[0.1]},{"index":1,"embedding":[0.2]}],"usage":{"prompt_tokens":2,"total_tokens":2}}`})
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                   "EMBEDDING",
		"EMBEDDING__SOURCES":           "primary",
		"EMBEDDING__PRIMARY__BASE_URL": emb.URL,
	})
	resp, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{" ", "a"}})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{0.1}, {0.2}}, resp.Vectors)
	var body struct {
		Input []string `json:"input"`
	}
	emb.last(t, &body)
	assert.Equal(t, []string{" ", "a"}, body.Input)
}

// A tool whose Parameters hold no schema — a nil map or json.RawMessage, or
// JSON null — is a function without arguments, as with nil: it is sent, on
// the OpenAI wire without "parameters", on the Anthropic wire with the
// empty object schema.
func TestToolWithANilSchemaIsAFunctionWithoutArguments(t *testing.T) {
	for name, params := range map[string]any{
		"nil map":         map[string]any(nil),
		"nil RawMessage":  json.RawMessage(nil),
		"JSON null":       `null`,
		"empty JSON text": "",
	} {
		t.Run(name, func(t *testing.T) {
			oa := newWireServer(t, sseReply(oaEvents("stop", `{"role":"assistant","content":"noon"}`)))
			claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "noon")...)))
			gw := mixedScope(t, oa, claude)
			req := pgw.ChatRequest{
				Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "What time is it?"}},
				Tools:    []pgw.Tool{pgw.FunctionTool("now", "The current time", params)},
			}
			resp, err := gw.Chat(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, "oa", resp.Source)
			var oaBody struct {
				Tools []struct {
					Function map[string]json.RawMessage `json:"function"`
				} `json:"tools"`
			}
			oa.last(t, &oaBody)
			require.Len(t, oaBody.Tools, 1)
			assert.NotContains(t, oaBody.Tools[0].Function, "parameters")

			oa.script(unavailable)
			resp, err = gw.Chat(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, "claude", resp.Source)
			var antBody struct {
				Tools []struct {
					InputSchema json.RawMessage `json:"input_schema"`
				} `json:"tools"`
			}
			claude.last(t, &antBody)
			require.Len(t, antBody.Tools, 1)
			assert.JSONEq(t, `{"type":"object","properties":{}}`, string(antBody.Tools[0].InputSchema))
		})
	}
}

// Tool-call IDs from another provider may hold characters the Messages API
// does not take in a tool_use id ("functions.get_weather:0"): on the
// Anthropic wire each is replaced by '_', the same in the call and in its
// result, and an ID that would then be another ID of the request gets a
// suffix, so calls and results stay paired. The OpenAI wire sends the IDs
// as they are.
func TestToolCallIDsAnthropicDoesNotTakeAreSentPaired(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "Paris 18, Tokyo 22.")...)))
	gw := mixedScope(t, oa, claude)
	call := func(id, city string) pgw.ToolCall {
		return pgw.ToolCall{ID: id, Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"` + city + `"}`}}
	}
	req := pgw.ChatRequest{
		Messages: []pgw.Message{
			{Role: pgw.RoleUser, Content: "Weather in Paris, Tokyo and Rome?"},
			{Role: pgw.RoleAssistant, ToolCalls: []pgw.ToolCall{
				call("functions.get_weather:0", "Paris"), call("functions_get_weather_0", "Tokyo"), call("call é/1", "Rome"),
			}},
			{Role: pgw.RoleTool, ToolCallID: "call é/1", Content: "25"},
			{Role: pgw.RoleTool, ToolCallID: "functions.get_weather:0", Content: "18"},
			{Role: pgw.RoleTool, ToolCallID: "functions_get_weather_0", Content: "22"},
		},
		Tools: []pgw.Tool{weatherTool},
	}
	resp, err := gw.Chat(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)

	var antBody struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	claude.last(t, &antBody)
	require.Len(t, antBody.Messages, 3)
	var uses, results []string
	for _, b := range antBody.Messages[1].Content {
		uses = append(uses, b.ID)
	}
	for _, b := range antBody.Messages[2].Content {
		results = append(results, b.ToolUseID)
	}
	assert.Equal(t, []string{"functions_get_weather_0_2", "functions_get_weather_0", "call___1"}, uses)
	assert.Equal(t, []string{"call___1", "functions_get_weather_0_2", "functions_get_weather_0"}, results)

	// The OpenAI-compatible wire takes any ID: sent as it is.
	oa.script(sseReply(oaEvents("stop", `{"role":"assistant","content":"Paris 18."}`)))
	resp, err = gw.Chat(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "oa", resp.Source)
	var oaBody struct {
		Messages []struct {
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	oa.last(t, &oaBody)
	require.Len(t, oaBody.Messages, 5)
	require.Len(t, oaBody.Messages[1].ToolCalls, 3)
	assert.Equal(t, "functions.get_weather:0", oaBody.Messages[1].ToolCalls[0].ID)
	assert.Equal(t, "call é/1", oaBody.Messages[2].ToolCallID)
}
