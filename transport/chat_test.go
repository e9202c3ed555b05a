package transport_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/transport"
)

func TestValidateNamesTheFieldAtFault(t *testing.T) {
	user := transport.Message{Role: "user", Content: "hi"}
	tool := transport.FunctionTool("f", "", map[string]any{"type": "object"})
	nan := 3.0
	cases := []struct {
		name  string
		req   transport.ChatRequest
		field string
	}{
		{"unknown role", transport.ChatRequest{Messages: []transport.Message{{Role: "bot", Content: "x"}}}, "Messages[0].Role"},
		{"content and parts", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "x", Parts: []transport.ContentPart{transport.TextPart("y")}}}}, "Messages[0].Parts"},
		{"empty image url", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart("", "")}}}}, "Messages[0].Parts[0].ImageURL.URL"},
		{"image url scheme", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart("ftp://x", "")}}}}, "Messages[0].Parts[0].ImageURL.URL"},
		{"image detail", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.ImagePart("https://x/y.png", "max")}}}}, "Messages[0].Parts[0].ImageURL.Detail"},
		{"part type", transport.ChatRequest{Messages: []transport.Message{{Role: "user", Parts: []transport.ContentPart{{Type: "audio"}}}}}, "Messages[0].Parts[0].Type"},
		{"tool calls on a user message", transport.ChatRequest{Messages: []transport.Message{{Role: "user", ToolCalls: []transport.ToolCall{{ID: "c", Function: transport.FunctionCall{Name: "f"}}}}}}, "Messages[0].ToolCalls"},
		{"tool call without id", transport.ChatRequest{Messages: []transport.Message{{Role: "assistant", ToolCalls: []transport.ToolCall{{Function: transport.FunctionCall{Name: "f"}}}}}}, "Messages[0].ToolCalls[0].ID"},
		{"tool result without call id", transport.ChatRequest{Messages: []transport.Message{{Role: "tool", Content: "42"}}}, "Messages[0].ToolCallID"},
		{"bad tool name", transport.ChatRequest{Messages: []transport.Message{user}, Tools: []transport.Tool{transport.FunctionTool("get weather", "", nil)}}, "Tools[0].Function.Name"},
		{"tool offered twice", transport.ChatRequest{Messages: []transport.Message{user}, Tools: []transport.Tool{tool, tool}}, "Tools[1].Function.Name"},
		{"parameters not an object", transport.ChatRequest{Messages: []transport.Message{user}, Tools: []transport.Tool{transport.FunctionTool("f", "", []int{1})}}, "Tools[0].Function.Parameters"},
		{"unknown tool choice", transport.ChatRequest{Messages: []transport.Message{user}, Tools: []transport.Tool{tool}, ToolChoice: "any"}, "ToolChoice"},
		{"tool choice names no tool", transport.ChatRequest{Messages: []transport.Message{user}, Tools: []transport.Tool{tool}, ToolChoice: transport.ToolChoiceFunction{Name: "g"}}, "ToolChoice"},
		{"tool choice of another type", transport.ChatRequest{Messages: []transport.Message{user}, ToolChoice: 3}, "ToolChoice"},
		{"json schema without schema", transport.ChatRequest{Messages: []transport.Message{user}, ResponseFormat: &transport.ResponseFormat{Type: "json_schema", JSONSchema: &transport.JSONSchema{Name: "x"}}}, "ResponseFormat.JSONSchema.Schema"},
		{"unknown format", transport.ChatRequest{Messages: []transport.Message{user}, ResponseFormat: &transport.ResponseFormat{Type: "yaml"}}, "ResponseFormat.Type"},
		{"top_p above 1", transport.ChatRequest{Messages: []transport.Message{user}, TopP: &nan}, "TopP"},
		{"empty stop", transport.ChatRequest{Messages: []transport.Message{user}, Stop: []string{""}}, "Stop[0]"},
		{"more than one choice", transport.ChatRequest{Messages: []transport.Message{user}, Extra: map[string]any{"n": 2}}, "Extra[n]"},
		{"choices as text", transport.ChatRequest{Messages: []transport.Message{user}, Extra: map[string]any{"n": "1"}}, "Extra[n]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			var re *transport.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.field, re.Field)
			assert.Contains(t, err.Error(), tc.field)
			assert.Equal(t, transport.CodeRequest, re.Code())
		})
	}
}

func TestValidateAcceptsAWholeToolConversation(t *testing.T) {
	req := transport.ChatRequest{
		Messages: []transport.Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Parts: []transport.ContentPart{transport.TextPart("look"), transport.ImagePart("data:image/png;base64,AA==", "low")}},
			{Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "c1", Type: "function", Function: transport.FunctionCall{Name: "f", Arguments: "{"}}}},
			{Role: "tool", ToolCallID: "c1", Content: "ok"},
		},
		Tools:      []transport.Tool{transport.FunctionTool("f", "does f", `{"type":"object"}`)},
		ToolChoice: &transport.ToolChoiceFunction{Name: "f"},
	}
	assert.NoError(t, req.Validate(), "malformed arguments of a past call are the model's text and pass")
}

func TestEstimateCountsEveryPartSent(t *testing.T) {
	base := transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}}
	n0 := transport.EstimateTokens(base)

	withImage := base
	withImage.Messages = []transport.Message{{Role: "user", Parts: []transport.ContentPart{transport.TextPart("hi"), transport.ImagePart("https://x/y.png", "")}}}
	assert.Equal(t, n0+transport.ImageTokenEstimate, transport.EstimateTokens(withImage), "an image counts the fixed estimate, its URL nothing")

	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "description": "a long description of the city parameter"}}}
	withTools := base
	withTools.Tools = []transport.Tool{transport.FunctionTool("get_weather", "Current weather of a city", schema)}
	assert.Greater(t, transport.EstimateTokens(withTools), n0+20, "tool names, descriptions and schemas count")

	withResult := base
	withResult.Messages = append(withResult.Messages,
		transport.Message{Role: "assistant", ToolCalls: []transport.ToolCall{{ID: "c1", Function: transport.FunctionCall{Name: "f", Arguments: `{"q":"a question"}`}}}},
		transport.Message{Role: "tool", ToolCallID: "c1", Content: "a tool result of some length, forty chars"})
	assert.Greater(t, transport.EstimateTokens(withResult), n0+15, "tool calls and results count")

	withMax := base
	withMax.MaxTokens = 100
	assert.Equal(t, n0+100, transport.EstimateTokens(withMax))

	withMax.EstTokens = 7
	assert.Equal(t, int64(7), transport.EstimateTokens(withMax), "the caller's estimate wins")
}

func TestCollectorJoinsPiecesByIndexAndKeepsTheFirstIDAndName(t *testing.T) {
	var c transport.Collector
	c.Add(transport.ChatChunk{Delta: "a"})
	c.Add(transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 1, ID: "b", Name: "g", Arguments: "[1"}}})
	c.Add(transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 0, ID: "a", Name: "f", Arguments: "{"}}})
	c.Add(transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 1, ID: "b", Name: "g", Arguments: ",2]"}}})
	c.Add(transport.ChatChunk{Refusal: "no", FinishReason: "tool_calls", Usage: &transport.Usage{TotalTokens: 9}})
	r := c.Response()
	assert.Equal(t, "a", r.Content)
	assert.Equal(t, "no", r.Refusal)
	assert.Equal(t, []transport.ToolCall{
		{ID: "a", Type: "function", Function: transport.FunctionCall{Name: "f", Arguments: "{"}},
		{ID: "b", Type: "function", Function: transport.FunctionCall{Name: "g", Arguments: "[1,2]"}},
	}, r.ToolCalls)
	assert.Equal(t, 9, r.Usage.TotalTokens)
}

func TestUsageBillableAndAdd(t *testing.T) {
	u := transport.Usage{PromptTokens: 10, CompletionTokens: 5, CachedPromptTokens: 4, ReasoningTokens: 2}
	assert.Equal(t, 15, u.Billable())
	u.TotalTokens = 16
	assert.Equal(t, 16, u.Billable(), "a reported total wins")
	assert.Equal(t, transport.Usage{PromptTokens: 20, CompletionTokens: 10, TotalTokens: 32, CachedPromptTokens: 8, ReasoningTokens: 4}, u.Add(u))
}

// One choice is what a ChatResponse and a ChatStream carry: Extra may ask
// for it as any number type, and for nothing else.
func TestValidateTakesOneChoiceInExtra(t *testing.T) {
	user := transport.Message{Role: "user", Content: "hi"}
	type count int
	for _, n := range []any{1, int64(1), 1.0, json.Number("1"), int8(1), int16(1), uint8(1), uint16(1), uint32(1), count(1), json.RawMessage("1"), json.RawMessage(" 1 ")} {
		assert.NoError(t, transport.ChatRequest{Messages: []transport.Message{user}, Extra: map[string]any{"n": n}}.Validate(), "%T", n)
	}
	for _, n := range []any{json.RawMessage("2"), json.RawMessage(`"1"`), uint8(2), count(3)} {
		err := transport.ChatRequest{Messages: []transport.Message{user}, Extra: map[string]any{"n": n}}.Validate()
		var re *transport.RequestError
		require.ErrorAs(t, err, &re, "%T %v", n, n)
		assert.Equal(t, "Extra[n]", re.Field)
	}
	err := transport.ChatRequest{Messages: []transport.Message{user}, Extra: map[string]any{"n": json.RawMessage("2")}}.Validate()
	assert.Contains(t, err.Error(), "2: a ChatResponse", "the value is shown as the JSON it sends")
}
