package openai_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

const mistralBase = "https://api.mistral.ai/v1"

// refusedOnMistral asserts that req is a *transport.RequestError on field
// for a source on Mistral's own API, before anything is sent and from
// ValidateChat alike.
func refusedOnMistral(t *testing.T, req transport.ChatRequest, field string) {
	t.Helper()
	src := transport.Source{Name: "mi", BaseURL: mistralBase, Provider: "openai"}
	var re *transport.RequestError
	require.ErrorAs(t, openai.New().ValidateChat(src, req), &re)
	assert.Equal(t, field, re.Field)
	assert.Equal(t, "mi", re.Source)
	assert.Contains(t, re.Problem, "422")
	_, err := openai.New().ChatStream(testCtx(t), src, req)
	require.ErrorAs(t, err, &re)
	assert.Equal(t, field, re.Field)
}

// Mistral's own API has no end-user field and answers one with a 422: the
// request is refused before it is sent there; every other host gets user.
func TestChatUserIsRefusedForMistral(t *testing.T) {
	req := hello()
	req.User = "user-1234"
	refusedOnMistral(t, req, "User")

	var h anyHost
	assert.Equal(t, "user-1234", h.sent(t, "https://api.openai.com/v1", 0, req)["user"])
	assert.Equal(t, "user-1234", h.sent(t, "http://vllm:8000/v1", 0, req)["user"])
}

// Mistral's own API names only tool results: a participant's name on any
// other message is refused before it is sent there, a tool result's name
// goes.
func TestChatMessageNameOnMistral(t *testing.T) {
	for i, role := range []string{transport.RoleSystem, transport.RoleUser} {
		req := hello()
		req.Messages = []transport.Message{
			{Role: transport.RoleSystem, Content: "be brief"},
			{Role: transport.RoleUser, Content: "say hello"},
		}
		req.Messages[i].Name = "alice"
		require.Equal(t, role, req.Messages[i].Role)
		refusedOnMistral(t, req, map[int]string{0: "Messages[0].Name", 1: "Messages[1].Name"}[i])

		var h anyHost
		body := h.sent(t, "https://api.openai.com/v1", 0, req)
		msgs, ok := body["messages"].([]any)
		require.True(t, ok)
		assert.Equal(t, "alice", msgs[i].(map[string]any)["name"], "OpenAI's API takes the name")
	}

	req := transport.ChatRequest{Messages: []transport.Message{
		{Role: transport.RoleUser, Content: "weather in Paris?"},
		{Role: transport.RoleAssistant, ToolCalls: []transport.ToolCall{{ID: "call_1", Type: "function",
			Function: transport.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: transport.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: `{"temp_c":18}`},
	}}
	require.NoError(t, openai.New().ValidateChat(transport.Source{Name: "mi", BaseURL: mistralBase}, req))
	var h anyHost
	body := h.sent(t, mistralBase, 0, req)
	msgs, ok := body["messages"].([]any)
	require.True(t, ok)
	require.Len(t, msgs, 3)
	assert.Equal(t, "get_weather", msgs[2].(map[string]any)["name"], "a tool result's name goes to Mistral")
}

// Mistral's own API knows no developer role: a developer message goes to it
// as a system message, in its place, and to every other host as written.
func TestChatDeveloperRoleIsSystemOnMistral(t *testing.T) {
	req := hello()
	req.Messages = []transport.Message{
		{Role: transport.RoleDeveloper, Content: "answer in French"},
		{Role: transport.RoleUser, Content: "say hello"},
	}
	roles := func(base string) []any {
		var h anyHost
		body := h.sent(t, base, 0, req)
		msgs, ok := body["messages"].([]any)
		require.True(t, ok)
		var out []any
		for _, m := range msgs {
			mm, ok := m.(map[string]any)
			require.True(t, ok)
			out = append(out, mm["role"])
			assert.NotEmpty(t, mm["content"])
		}
		return out
	}
	assert.Equal(t, []any{"system", "user"}, roles(mistralBase))
	assert.Equal(t, []any{"system", "user"}, roles("https://codestral.mistral.ai/v1"))
	assert.Equal(t, []any{"developer", "user"}, roles("https://api.openai.com/v1"))
	assert.Equal(t, []any{"developer", "user"}, roles("http://vllm:8000/v1"))
	assert.Equal(t, transport.RoleDeveloper, req.Messages[0].Role, "the caller's request is not changed")
}
