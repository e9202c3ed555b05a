package main

// These tests use anthropic-sdk-go as its users do, through pgw's governed
// client, against scripted upstreams speaking the Messages API, and check
// what pgw did with each request and answer.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

const message = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",
"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,
"usage":{"input_tokens":5,"output_tokens":1}}`

func anthropicError(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
}

func ev(name, data string) string { return "event: " + name + "\ndata: " + data }

var messageStream = []string{
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	ev("ping", `{"type":"ping"}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`),
	ev("message_stop", `{"type":"message_stop"}`),
}

type govRig struct {
	gw              *pgw.GatewayClient
	rec             *wire.Recorder
	primary, backup *wire.Server
	client          anthropic.Client
}

func newGovRig(t *testing.T, def http.HandlerFunc, extra []string, opts ...option.RequestOption) *govRig {
	t.Helper()
	r := &govRig{rec: &wire.Recorder{}, primary: wire.Start(t, def), backup: wire.Start(t, def)}
	r.gw = wire.Gateway(t, wire.Env("CHAT", "anthropic", r.primary.URL, r.backup.URL, extra...), r.rec)
	r.client = anthropic.NewClient(append([]option.RequestOption{
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(r.gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
		option.WithAPIKey("set-by-pgw"),
	}, opts...)...)
	return r
}

func TestAnthropicSDKKeyReplacedVersionKept(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), nil)
	r.primary.Next(wire.JSON(529, anthropicError("overloaded_error", "Overloaded")))
	got, err := Ask(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	for _, s := range []*wire.Server{r.primary, r.backup} {
		require.Equal(t, 1, s.Count())
		h := s.Requests()[0].Header
		assert.Equal(t, "/v1/messages", s.Requests()[0].Path)
		assert.NotEmpty(t, h.Get("Anthropic-Version"), "the SDK's anthropic-version goes through")
		assert.Empty(t, h.Get("Authorization"))
		assert.NotContains(t, h.Values("X-Api-Key"), "set-by-pgw")
		assert.Len(t, h.Values("X-Api-Key"), 1)
	}
	assert.Equal(t, "sk-primary", r.primary.Requests()[0].Header.Get("X-Api-Key"))
	assert.Equal(t, "sk-backup", r.backup.Requests()[0].Header.Get("X-Api-Key"))
	att := r.rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeFailure, att[0].Outcome, "a 529 is the source's failure")
	assert.Equal(t, 529, att[0].Status)
	assert.Equal(t, 1, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
}

func TestAnthropicSDKStreamEventsThroughAFailOver(t *testing.T) {
	r := newGovRig(t, wire.Events(messageStream...), nil)
	// The primary fails inside its stream, before any content: an
	// overloaded error event after message_start.
	r.primary.Next(wire.Events(messageStream[0], ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	st := r.client.Messages.NewStreaming(context.Background(), params("hello"))
	defer st.Close()
	var types []string
	var text strings.Builder
	var msg anthropic.Message
	for st.Next() {
		e := st.Current()
		types = append(types, e.Type)
		require.NoError(t, msg.Accumulate(e))
		if e.Type == "content_block_delta" {
			text.WriteString(e.Delta.Text)
		}
	}
	require.NoError(t, st.Err())
	assert.Equal(t, "Hello there", text.String())
	// The SDK drops pings itself.
	assert.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}, types)
	assert.Equal(t, int64(2), msg.Usage.OutputTokens)
	assert.Equal(t, 1, r.backup.Count())
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	att := r.rec.Attempts()
	assert.Equal(t, 529, att[0].Status, "an overloaded event counts as a 529")
}

func TestAnthropicSDKRetryAfterHoldsOff(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), nil)
	r.primary.Next(wire.JSON(429, anthropicError("rate_limit_error", "slow down"), "retry-after", "40"))
	_, err := Ask(context.Background(), r.client, "hello")
	require.NoError(t, err)
	att := r.rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, int64(40), int64(att[0].RetryAfter.Seconds()))
	_, err = Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Equal(t, 1, r.primary.Count(), "held off")
	assert.Equal(t, 2, r.backup.Count())
}

func TestAnthropicSDKErrorsAreItsOwn(t *testing.T) {
	t.Run("400 from the upstream", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, message), nil)
		r.primary.Next(wire.JSON(400, anthropicError("invalid_request_error", "max_tokens: too large")))
		_, err := Ask(context.Background(), r.client, "hello")
		var aerr *anthropic.Error
		require.ErrorAs(t, err, &aerr)
		assert.Equal(t, 400, aerr.StatusCode)
		assert.EqualValues(t, "invalid_request_error", aerr.Type())
		assert.Equal(t, 0, r.backup.Count())
	})
	t.Run("every source overloaded, SDK retries left on", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(529, anthropicError("overloaded_error", "Overloaded")), []string{"MAX_ATTEMPTS", "2"}, option.WithMaxRetries(2))
		_, err := Ask(context.Background(), r.client, "hello")
		var aerr *anthropic.Error
		require.ErrorAs(t, err, &aerr)
		assert.Equal(t, pgw.SDKVerdictStatus, aerr.StatusCode)
		assert.Len(t, r.rec.Calls(), 1, "the SDK did not retry pgw's verdict")
		assert.Equal(t, 2, r.primary.Count()+r.backup.Count())
		var gue *pgw.GatewayUnavailableError
		assert.ErrorAs(t, pgw.ErrorFrom(err), &gue)
	})
}

// MAX_IN_FLIGHT=1 on the primary: a stream abandoned mid-way gives its slot
// back, so the next call is admitted there.
func TestAnthropicSDKStreamClosedEarlyGivesTheSlotBack(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newGovRig(t, wire.JSON(200, message), []string{"PRIMARY__MAX_IN_FLIGHT", "1", "BACKUP__MAX_IN_FLIGHT", "1"})
	r.primary.Next(wire.Hang(release, messageStream[:4]...))
	st := r.client.Messages.NewStreaming(context.Background(), params("hello"))
	for st.Next() && st.Current().Type != "content_block_delta" {
	}
	require.Equal(t, "content_block_delta", st.Current().Type)
	require.NoError(t, st.Close())
	_, err := Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Equal(t, 2, r.primary.Count())
	assert.Equal(t, 0, r.backup.Count())
	assert.Equal(t, pgw.OutcomeAbandoned, r.rec.Attempts()[0].Outcome)
}

// The Anthropic BASE_URL the configuration reference gives — with its
// version path, as pgw's own Anthropic transport needs it — serves the SDK
// too: its "v1/messages" is not sent as /v1/v1/messages.
func TestAnthropicSDKOnABaseURLWithTheVersionPath(t *testing.T) {
	rec := &wire.Recorder{}
	primary, backup := wire.Start(t, wire.JSON(200, message)), wire.Start(t, wire.JSON(200, message))
	gw := wire.Gateway(t, wire.Env("CHAT", "anthropic", primary.URL+"/v1", backup.URL+"/v1"), rec)
	client := anthropic.NewClient(
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
		option.WithAPIKey("set-by-pgw"),
	)
	got, err := Ask(context.Background(), client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	require.Equal(t, 1, primary.Count())
	assert.Equal(t, "/v1/messages", primary.Requests()[0].Path)
	// The same source serves pgw's own transport.
	// The Messages API requires a model: the request names one, as the
	// source has no MODEL.
	resp, err := gw.Chat(context.Background(), pgw.ChatRequest{Model: "claude-sonnet-4-5", Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "hello"}}})
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Content)
	assert.Equal(t, "/v1/messages", primary.Requests()[1].Path)
}
