package sdkhttp_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/sdkhttp"
	"github.com/pgw-go/pgw/transport"
)

func TestJSONUsageCountsEveryPromptTokenAndTheDetails(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		want transport.Usage
	}{
		"chat completion": {`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":30,"total_tokens":130,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":20}}}`,
			transport.Usage{PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130, CachedPromptTokens: 64, ReasoningTokens: 20}},
		"responses": {`{"object":"response","usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":64},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":130}}`,
			transport.Usage{PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130, CachedPromptTokens: 64, ReasoningTokens: 20}},
		"messages": {`{"type":"message","usage":{"input_tokens":5,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":20}}`,
			transport.Usage{PromptTokens: 1205, CompletionTokens: 20, CachedPromptTokens: 1000}},
	} {
		got := sdkhttp.JSONUsage([]byte(c.body))
		if assert.NotNil(t, got, name) {
			assert.Equal(t, c.want, *got, name)
		}
	}
}

func TestAStreamsPromptFiguresAreMergedEventByEvent(t *testing.T) {
	items, err := readAll(t, events(
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":5,\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"+
			// A delta that repeats only some of the figures.
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":5,\"output_tokens\":20}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, items, 4)
	require.NotNil(t, items[2].Usage)
	assert.Equal(t, transport.Usage{PromptTokens: 1205, CompletionTokens: 20, CachedPromptTokens: 1000}, *items[2].Usage)
}
