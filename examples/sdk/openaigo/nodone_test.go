package main

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// Some OpenAI-compatible servers end a stream after its finish reason (and
// usage) without "data: [DONE]". The answer is whole, as pgw's own OpenAI
// transport takes it: the SDK reads it without an error and the source is
// not blamed for it.
func TestOpenAIGoStreamEndingAfterItsFinishReasonWithoutDoneIsWhole(t *testing.T) {
	r := newGovRig(t, wire.Events(roleChunk, chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo"}`, ""), chunk(`{}`, "stop"), usageChunk), []string{"FAILURE_THRESHOLD", "1"})
	for range 2 {
		st := r.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		})
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		require.NoError(t, st.Err())
		require.NoError(t, st.Close())
		require.Len(t, acc.Choices, 1)
		assert.Equal(t, "Hello", acc.Choices[0].Message.Content)
	}
	assert.Equal(t, []string{"primary:" + pgw.OutcomeSuccess, "primary:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	assert.Equal(t, pgw.StateClosed, wire.State(t, r.gw, "CHAT", "primary").State)
}
