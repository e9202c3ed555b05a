package main

// openai-go inside pgw.CallStream, on a body the upstream closes cleanly
// mid-answer: the SDK's stream reports no error, so only a TerminalItem
// tells pgw the answer was cut.

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

func TestCallStreamWithATerminalItemCatchesACleanCut(t *testing.T) {
	r := newGovRig(t, wire.Events(roleChunk, chunk(`{"content":"one "}`, "")), nil)
	st, err := pgw.CallStream(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (pgw.Streamer[openai.ChatCompletionChunk], error) {
		c := openai.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0))
		return pgw.FromIterator[openai.ChatCompletionChunk](c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		})), nil
	}, pgw.FirstItem(hasContent), pgw.TerminalItem(finished))
	require.NoError(t, err)
	var got string
	for {
		c, err := st.Recv()
		if err != nil {
			require.False(t, errors.Is(err, io.EOF), "a cut answer must not end as io.EOF")
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			break
		}
		if len(c.Choices) > 0 {
			got += c.Choices[0].Delta.Content
		}
	}
	require.NoError(t, st.Close())
	assert.Equal(t, "one ", got)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
	assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
}

// The example's StreamViaCallStream names its terminal chunk, so a body
// closed cleanly mid-answer is reported as a cut, with what arrived.
func TestStreamViaCallStreamReportsACleanCut(t *testing.T) {
	r := newGovRig(t, wire.Events(roleChunk, chunk(`{"content":"one "}`, "")), nil)
	got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, "one ", got)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
}
