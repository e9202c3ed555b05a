package main

// More of anthropic-sdk-go through pgw: a streamed tool call, a 403 and a
// 400, retry-after-ms and a cancellation mid-stream.

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

var toolStream = []string{
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`),
	ev("message_stop", `{"type":"message_stop"}`),
}

func toolParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))},
		Tools:     []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
	}
}

// streamWhole streams toolParams through client and returns the message
// the SDK accumulated, with no error on the way.
func streamWhole(t *testing.T, client anthropic.Client) anthropic.Message {
	t.Helper()
	st := client.Messages.NewStreaming(context.Background(), toolParams())
	var msg anthropic.Message
	for st.Next() {
		require.NoError(t, msg.Accumulate(st.Current()))
	}
	require.NoError(t, st.Err())
	return msg
}

// A streamed tool_use (its input in input_json_delta pieces) after a 529 on
// the primary: the SDK accumulates the backup's call whole.
func TestAnthropicSDKStreamedToolUseFailsOverBeforeContent(t *testing.T) {
	r := newGovRig(t, wire.Events(toolStream...), nil)
	r.primary.Next(wire.JSON(529, anthropicError("overloaded_error", "Overloaded")))
	msg := streamWhole(t, r.client)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "get_weather", msg.Content[0].Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(msg.Content[0].Input))
	assert.Equal(t, 1, r.backup.Count())
}

// A stream cut after its tool_use block opened and before any of its input:
// the call fails over and the caller gets the backup's call whole.
func TestAnthropicSDKToolUseCutBeforeItsInputFailsOver(t *testing.T) {
	r := newGovRig(t, wire.Events(toolStream...), nil)
	r.primary.Next(wire.Events(toolStream[:2]...))
	msg := streamWhole(t, r.client)
	require.Len(t, msg.Content, 1)
	assert.JSONEq(t, `{"city":"Paris"}`, string(msg.Content[0].Input))
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

// A 403 opens the primary's breaker and the backup answers; a 400 that
// echoes the key comes back at once as the SDK's *anthropic.Error, without
// the key.
func TestAnthropicSDK403OpensTheBreaker400ReturnsAtOnce(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), nil)
	r.primary.Next(wire.JSON(403, anthropicError("permission_error", "no")))
	_, err := r.client.Messages.New(context.Background(), toolParams())
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
	assert.Equal(t, 1, r.backup.Count())
	r2 := newGovRig(t, wire.JSON(200, message), nil)
	r2.primary.Next(wire.JSON(400, anthropicError("invalid_request_error", "bad sk-primary")))
	_, err = r2.client.Messages.New(context.Background(), toolParams())
	var ae *anthropic.Error
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, 400, ae.StatusCode)
	assert.NotContains(t, err.Error(), "sk-primary")
	assert.Equal(t, 0, r2.backup.Count())
}

// A 429 with retry-after-ms holds the source off for it.
func TestAnthropicSDKRetryAfterMs(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), nil)
	r.primary.Next(wire.JSON(429, anthropicError("rate_limit_error", "slow"), "retry-after-ms", "45000"))
	_, err := r.client.Messages.New(context.Background(), toolParams())
	require.NoError(t, err)
	att := r.rec.Attempts()
	require.NotEmpty(t, att)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, 45*time.Second, att[0].RetryAfter)
}

// The caller cancels after the first text delta: the SDK reports the
// cancellation and the primary's one slot is free for the next call.
func TestAnthropicSDKCancelMidStreamGivesTheSlotBack(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newGovRig(t, wire.JSON(200, message), []string{"PRIMARY__MAX_IN_FLIGHT", "1", "BACKUP__MAX_IN_FLIGHT", "1"})
	r.primary.Next(wire.Hang(release, messageStream[:4]...))
	ctx, cancel := context.WithCancel(context.Background())
	st := r.client.Messages.NewStreaming(ctx, toolParams())
	for st.Next() {
		if st.Current().Type == "content_block_delta" {
			break
		}
	}
	cancel()
	for st.Next() {
	}
	assert.True(t, errors.Is(st.Err(), context.Canceled), "%v", st.Err())
	require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	_, err := r.client.Messages.New(context.Background(), toolParams())
	require.NoError(t, err)
	assert.Equal(t, 2, r.primary.Count())
	_ = st.Close()
}

// A stream cut after its first text delta, before message_delta and
// message_stop: the SDK's error matches io.ErrUnexpectedEOF and the source
// is charged with a failure, without a fail-over.
func TestAnthropicSDKStreamCutAfterContentIsAnUnexpectedEOF(t *testing.T) {
	r := newGovRig(t, wire.Events(messageStream[:4]...), nil)
	st := r.client.Messages.NewStreaming(context.Background(), toolParams())
	for st.Next() {
	}
	require.Error(t, st.Err())
	assert.ErrorIs(t, st.Err(), io.ErrUnexpectedEOF)
	_ = st.Close()
	require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
	assert.Equal(t, 0, r.backup.Count())
}
