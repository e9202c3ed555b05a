package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// The Messages API refuses a conversation with tool calls or tool results
// in a request that offers no tools ("Requests which include tool_use or
// tool_result blocks must define tools", a 400), where OpenAI takes it: a
// scope with an Anthropic source refuses such a request before any
// attempt, naming Tools and the source, rather than finding out at the
// backup half-way through a fail-over. With the tools offered (ToolChoice
// none keeps the model from calling them) it is sent.
func TestToolHistoryWithoutToolsIsRefusedForAnthropic(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "ok")...)))
	gw := mixedScope(t, oa, claude)
	req := pgw.ChatRequest{Messages: []pgw.Message{
		{Role: pgw.RoleUser, Content: "weather in Paris?"},
		{Role: pgw.RoleAssistant, ToolCalls: []pgw.ToolCall{{ID: "call_1", Type: "function", Function: pgw.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: pgw.RoleTool, ToolCallID: "call_1", Content: "sunny"},
		{Role: pgw.RoleUser, Content: "and tomorrow?"},
	}}
	_, err := gw.Chat(context.Background(), req)
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Tools", re.Field)
	assert.Equal(t, "claude", re.Source)
	assert.Contains(t, re.Problem, "Messages[1] calls a tool")
	assert.Zero(t, oa.requests()+claude.requests(), "nothing is sent")

	req.Tools = []pgw.Tool{pgw.FunctionTool("weather", "The weather in a city.", nil)}
	req.ToolChoice = pgw.ToolChoiceNone
	resp, err := gw.Chat(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)
	var body map[string]any
	claude.last(t, &body)
	assert.NotEmpty(t, body["tools"])
	assert.Equal(t, map[string]any{"type": "none"}, body["tool_choice"])
}
