package main

// go-openai through the governed client with tools and streaming: a tool
// call streamed in pieces, failed over before its first piece, reaches the
// SDK whole; the request's tools reach the source as the SDK sent them; the
// source's MODEL replaces the SDK's.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

var toolStream = []string{
	chunk(`{"role":"assistant","content":null}`, ""),
	chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
	chunk(`{}`, "tool_calls"),
	"data: [DONE]",
}

func TestGoOpenAIStreamedToolCallFailsOverBeforeItsFirstPiece(t *testing.T) {
	r := newGovRig(t, wire.Events(toolStream...), "BACKUP__MODEL", "gpt-4.1-mini")
	// The primary sends its role-only opening, then the connection drops:
	// nothing of the answer reached the SDK, so the call fails over.
	r.primary.Next(wire.Events(toolStream[0]))
	req := request("What is the weather in Paris?")
	req.Tools = []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
		Name:       "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}}}
	st, err := r.client.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer st.Close()
	var id, name, args, finish string
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(c.Choices) == 0 {
			continue
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			if tc.ID != "" {
				id = tc.ID
			}
			name += tc.Function.Name
			args += tc.Function.Arguments
		}
		if c.Choices[0].FinishReason != "" {
			finish = string(c.Choices[0].FinishReason)
		}
	}
	assert.Equal(t, "call_1", id)
	assert.Equal(t, "get_weather", name)
	assert.JSONEq(t, `{"city":"Paris"}`, args)
	assert.Equal(t, "tool_calls", finish)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())

	for i, s := range []*wire.Server{r.primary, r.backup} {
		require.Equal(t, 1, s.Count())
		var body map[string]any
		require.NoError(t, json.Unmarshal(s.Requests()[0].Body, &body))
		assert.Equal(t, []string{"gpt-4o-mini", "gpt-4.1-mini"}[i], body["model"], "the backup's MODEL replaces the SDK's; the primary has none")
		assert.Equal(t, true, body["stream"])
		tools, _ := body["tools"].([]any)
		require.Len(t, tools, 1)
		fn := tools[0].(map[string]any)["function"].(map[string]any)
		assert.Equal(t, "get_weather", fn["name"])
		assert.NotNil(t, fn["parameters"])
	}
}
