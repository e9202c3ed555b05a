package main

// The token quota sees the usage anthropic-sdk-go's answers report: on a
// source whose TPM the first answer's usage fills, the next call goes to the
// backup. A JSON answer, an event stream (message_start's input, then
// message_delta's output — and its cumulative figures, which are not summed
// twice), and pgw.CallStream around the SDK's own stream, whose terminal
// item is message_stop.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// settleStream is messageStream whose usage, 400 in and 600 out, fills a
// TPM of 1000; delta is message_delta's usage.
func settleStream(delta string) []string {
	return []string{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":400,"output_tokens":1}}}`),
		messageStream[1], messageStream[2], messageStream[3], messageStream[4], messageStream[5],
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":`+delta+`}`),
		messageStream[7],
	}
}

func settleTwice(t *testing.T, def http.HandlerFunc, first, then func(r *govRig) error) *govRig {
	t.Helper()
	r := newGovRig(t, def, []string{"PRIMARY__TPM", "1000"})
	require.NoError(t, first(r))
	att := r.rec.Attempts()
	require.Len(t, att, 1)
	assert.Equal(t, pgw.Usage{PromptTokens: 400, CompletionTokens: 600, TotalTokens: 1000}, att[0].Usage)
	require.NoError(t, then(r))
	assert.Equal(t, 1, r.primary.Count(), "the primary's TPM is full of the first answer's usage")
	assert.Equal(t, 1, r.backup.Count())
	return r
}

func settleStreamed(r *govRig) error {
	got, err := Stream(context.Background(), r.client, "hello")
	if err == nil && got != "Hello there" {
		return errors.New("streamed " + got)
	}
	return err
}

func TestAnthropicSDKSettlesAJSONAnswersUsage(t *testing.T) {
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",
"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,
"usage":{"input_tokens":400,"output_tokens":600}}`
	ask := func(r *govRig) error { _, err := Ask(context.Background(), r.client, "hello"); return err }
	settleTwice(t, wire.JSON(200, answer), ask, ask)
}

func TestAnthropicSDKSettlesMessageDeltaUsage(t *testing.T) {
	for name, delta := range map[string]string{
		"output only": `{"output_tokens":600}`,
		"cumulative":  `{"input_tokens":400,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":600}`,
		"null input":  `{"input_tokens":null,"output_tokens":600}`,
	} {
		t.Run(name, func(t *testing.T) {
			settleTwice(t, wire.Events(settleStream(delta)...), settleStreamed, settleStreamed)
		})
	}
}

// callStream streams the SDK's own events under pgw.CallStream, as a
// program without the governed client would: the first content delta ends
// the retries, message_stop ends the answer, and message_start's and
// message_delta's usage settle the quota.
func callStream(ctx context.Context, gw *pgw.GatewayClient) (string, error) {
	st, err := pgw.CallStream(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (pgw.Streamer[anthropic.MessageStreamEventUnion], error) {
		c := anthropic.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0))
		return pgw.FromIterator[anthropic.MessageStreamEventUnion](c.Messages.NewStreaming(ctx, params("hello"))), nil
	},
		pgw.FirstItem(func(ev anthropic.MessageStreamEventUnion) bool { return ev.Type == "content_block_delta" }),
		pgw.TerminalItem(func(ev anthropic.MessageStreamEventUnion) bool { return ev.Type == "message_stop" }),
		pgw.ItemUsage(func(ev anthropic.MessageStreamEventUnion) (pgw.Usage, bool) {
			switch ev.Type {
			case "message_start":
				u := ev.Message.Usage
				return pgw.Usage{PromptTokens: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), CompletionTokens: int(u.OutputTokens)}, true
			case "message_delta":
				return pgw.Usage{CompletionTokens: int(ev.Usage.OutputTokens)}, true
			}
			return pgw.Usage{}, false
		}),
		pgw.EstimateTokens[anthropic.MessageStreamEventUnion](10))
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b []byte
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return string(b), nil
		}
		if err != nil {
			return string(b), err
		}
		if ev.Type == "content_block_delta" {
			b = append(b, ev.Delta.Text...)
		}
	}
}

func TestAnthropicSDKInsideCallStreamSettlesItsUsage(t *testing.T) {
	viaCallStream := func(r *govRig) error {
		got, err := callStream(context.Background(), r.gw)
		if err == nil && got != "Hello there" {
			return errors.New("streamed " + got)
		}
		return err
	}
	r := settleTwice(t, wire.Events(settleStream(`{"output_tokens":600}`)...), viaCallStream, viaCallStream)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeSuccess, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

// Before its first content delta, an overloaded answer fails over; a body
// that ends after content without message_stop (the SDK's stream reports
// no error) is a cut, the source's failure.
func TestAnthropicSDKInsideCallStreamFailsOverAndCatchesACut(t *testing.T) {
	t.Run("overloaded", func(t *testing.T) {
		r := newGovRig(t, wire.Events(messageStream...), nil)
		r.primary.Next(wire.JSON(529, anthropicError("overloaded_error", "Overloaded")))
		got, err := callStream(context.Background(), r.gw)
		require.NoError(t, err)
		assert.Equal(t, "Hello there", got)
		assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	})
	t.Run("cut", func(t *testing.T) {
		r := newGovRig(t, wire.Events(messageStream[:4]...), nil)
		got, err := callStream(context.Background(), r.gw)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Equal(t, "Hello ", got)
		assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
		assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
	})
}

// An error event in the stream: anthropic-sdk-go reports it as its own
// *anthropic.Error, whose status is the stream's 200 and whose type is the
// event's. Before the first content delta an overloaded_error or a
// rate_limit_error fails over, a mid-answer one is the source's failure;
// neither is ever the source's success.
func TestAnthropicSDKInsideCallStreamErrorEvents(t *testing.T) {
	errEv := func(typ string) string {
		return ev("error", `{"type":"error","error":{"type":"`+typ+`","message":"busy"}}`)
	}
	for _, typ := range []string{"overloaded_error", "rate_limit_error", "api_error"} {
		t.Run("before content "+typ, func(t *testing.T) {
			r := newGovRig(t, wire.Events(messageStream...), nil)
			r.primary.Next(wire.Events(messageStream[0], messageStream[1], errEv(typ)))
			got, err := callStream(context.Background(), r.gw)
			require.NoError(t, err)
			assert.Equal(t, "Hello there", got)
			out := r.rec.Outcomes()
			require.Len(t, out, 2)
			assert.NotEqual(t, "primary:"+pgw.OutcomeSuccess, out[0])
			assert.Equal(t, "backup:"+pgw.OutcomeSuccess, out[1])
		})
	}
	t.Run("mid-answer", func(t *testing.T) {
		r := newGovRig(t, wire.Events(messageStream...), nil)
		r.primary.Next(wire.Events(messageStream[0], messageStream[1], messageStream[3], errEv("overloaded_error")))
		got, err := callStream(context.Background(), r.gw)
		require.Error(t, err)
		var aerr *anthropic.Error
		assert.ErrorAs(t, err, &aerr, "errors.As reaches the SDK's error")
		assert.Equal(t, "Hello ", got)
		assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
		assert.Equal(t, 1, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
	})
}

// The SDK's error for an error event carries the stream's 200; pgw classes
// it by the event's type, as it classes an error event it reads itself: a
// rate_limit_error before content is a throttle, an authentication_error
// opens the breaker, an invalid_request_error mid-answer is the request's
// fault (recorded against nothing), an unknown type the source's failure.
func TestAnthropicSDKInsideCallStreamErrorEventsAreClassedByType(t *testing.T) {
	errEv := func(typ string) string {
		return ev("error", `{"type":"error","error":{"type":"`+typ+`","message":"busy"}}`)
	}
	for _, tc := range []struct{ typ, outcome string }{
		{"rate_limit_error", pgw.OutcomeThrottle},
		{"authentication_error", pgw.OutcomeFatal},
		{"overloaded_error", pgw.OutcomeFailure},
		{"some_new_error", pgw.OutcomeFailure},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			r := newGovRig(t, wire.Events(messageStream...), nil)
			r.primary.Next(wire.Events(messageStream[0], messageStream[1], errEv(tc.typ)))
			_, err := callStream(context.Background(), r.gw)
			require.NoError(t, err)
			assert.Equal(t, []string{"primary:" + tc.outcome, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
			att := r.rec.Attempts()
			require.Len(t, att, 2)
			assert.NotEqual(t, 200, att[0].Status, "an error is not recorded with the stream's 200")
		})
	}
}
