package sdkhttp_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/sdkhttp"
)

func TestABodyEndingAfterEveryFinishReasonIsWhole(t *testing.T) {
	for name, c := range map[string]struct {
		body  string
		whole bool
	}{
		"finish reason, no [DONE]": {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", true},
		"last event without its blank line": {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n", true},
		"finish reason in a line cut short": {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}", false},
		"no finish reason":                  {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n", false},
		"one of two choices finished":       {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"},{\"index\":1,\"delta\":{\"content\":\"Yo\"},\"finish_reason\":null}]}\n\n", false},
		"both choices finished": {"data: {\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"length\"}]}\n\n", true},
		"anthropic stop reason": {"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n", true},
		"anthropic without its stop reason": {"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":{\"output_tokens\":2}}\n\n", false},
		"responses text delta": {"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n", false},
	} {
		items, err := readAll(t, events(c.body))
		require.NotEmpty(t, items, name)
		if c.whole {
			assert.Equal(t, io.EOF, err, name)
		} else {
			assert.True(t, errors.Is(err, sdkhttp.ErrNoTerminalEvent), "%s: %v", name, err)
		}
	}
}

func TestAStringDeltaLeavesTheEventReadable(t *testing.T) {
	items, err := readAll(t, events("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"+
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"total_tokens\":4}}}\n\n"))
	assert.Equal(t, io.EOF, err)
	require.Len(t, items, 2)
	assert.True(t, items[0].Content)
	assert.True(t, items[1].Terminal)
	require.NotNil(t, items[1].Usage)
	assert.Equal(t, 4, items[1].Usage.TotalTokens)
}
