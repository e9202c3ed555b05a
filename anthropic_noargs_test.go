package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// A tool without arguments called on Anthropic (content_block_start's input
// {} and no fragment, or an empty one) is a call whose arguments are the
// empty JSON object, as in a whole message and on OpenAI: never "".
func TestAnthropicToolCallWithoutArgumentsIsAnEmptyObject(t *testing.T) {
	noArgs := pgw.FunctionTool("now", "The current time", nil)
	for name, reply := range map[string]wireReply{
		"stream without fragment": sseReply(antEvents("tool_use", antToolUse(0, "toolu_n", "now")...)),
		"stream, empty fragment":  sseReply(antEvents("tool_use", antToolUse(0, "toolu_n", "now", "")...)),
		"whole message": {status: 200, ctype: "application/json", body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
			`"content":[{"type":"tool_use","id":"toolu_n","name":"now","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}`},
	} {
		t.Run(name, func(t *testing.T) {
			oa := newWireServer(t, unavailable)
			claude := newWireServer(t, reply)
			gw := mixedScope(t, oa, claude)
			resp, err := gw.Chat(context.Background(), pgw.ChatRequest{
				Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "What time is it?"}},
				Tools:    []pgw.Tool{noArgs},
			})
			require.NoError(t, err)
			require.Len(t, resp.ToolCalls, 1)
			assert.Equal(t, "toolu_n", resp.ToolCalls[0].ID)
			assert.Equal(t, "now", resp.ToolCalls[0].Function.Name)
			assert.JSONEq(t, `{}`, resp.ToolCalls[0].Function.Arguments)
			assert.Equal(t, "tool_calls", resp.FinishReason)
		})
	}
}
