package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// The Messages API counts the prompt in three parts: input_tokens is only
// what was neither read from nor written to the prompt cache. The quota
// settles on every prompt token, as pgw's own Anthropic transport counts
// them, whether the SDK streams the answer or not.
func TestAnthropicSDKUsageCountsCachedPromptTokens(t *testing.T) {
	const cachedUsage = `"usage":{"input_tokens":5,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":1}`
	stream := []string{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,`+cachedUsage+`}}`),
		messageStream[1], messageStream[3], messageStream[5],
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`),
		messageStream[7],
	}
	whole := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",
"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,
"usage":{"input_tokens":5,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":20}}`
	want := pgw.Usage{PromptTokens: 1205, CompletionTokens: 20, TotalTokens: 1225, CachedPromptTokens: 1000}

	t.Run("streamed", func(t *testing.T) {
		r := newGovRig(t, wire.Events(stream...), nil)
		st := r.client.Messages.NewStreaming(context.Background(), params("hello"))
		for st.Next() {
		}
		require.NoError(t, st.Err())
		require.NoError(t, st.Close())
		att := r.rec.Attempts()
		require.Len(t, att, 1)
		assert.Equal(t, want, att[0].Usage)
	})
	t.Run("whole", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, whole), nil)
		_, err := Ask(context.Background(), r.client, "hello")
		require.NoError(t, err)
		att := r.rec.Attempts()
		require.Len(t, att, 1)
		assert.Equal(t, want, att[0].Usage)
	})
}
