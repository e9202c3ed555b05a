package main

// More of openai-go through pgw: a 403, structured output, an echoed key,
// a first-token stall and a stream cut after its content.

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// A 403 (a region the account may not use) opens the source's breaker and
// the backup answers.
func TestOpenAIGo403OpensTheBreaker(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(403, openAIError("unsupported_country_region_territory", "Country not supported")))
	_, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
	assert.Equal(t, 1, r.backup.Count())
}

// Structured output: the SDK's json_schema response format reaches the
// source as sent.
func TestOpenAIGoJSONSchemaReachesTheUpstream(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"city\":\"Paris\"}"},"finish_reason":"stop"}]}`), nil)
	resp, err := r.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("city?")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "city", Strict: openai.Bool(true), Schema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		}},
	})
	require.NoError(t, err)
	assert.Equal(t, `{"city":"Paris"}`, resp.Choices[0].Message.Content)
	body := string(r.primary.Requests()[0].Body)
	assert.Contains(t, body, `"json_schema"`)
	assert.Contains(t, body, `"strict":true`)
}

// An upstream 400 echoing the key: the SDK's error, its raw JSON and its
// dumps show none of it.
func TestOpenAIGoEchoedKeyIsInNoErrorText(t *testing.T) {
	r := newGovRig(t, wire.JSON(400, openAIError("bad", "Incorrect API key provided: sk-primary. You can find")), nil)
	_, err := r.ask(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sk-primary")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.NotContains(t, apiErr.RawJSON(), "sk-primary")
	assert.NotContains(t, apiErr.DumpRequest(true), "sk-primary")
	assert.NotContains(t, apiErr.DumpResponse(true), "sk-primary")
}

// A source that sends its role chunk and then nothing: WithFirstTokenTimeout
// does not apply to the SDK's client, the source's TIMEOUT_S bounds the
// read-ahead, and the call fails over.
func TestOpenAIGoFirstTokenStallIsBoundedByTimeoutS(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := &govRig{rec: &wire.Recorder{}, primary: wire.Start(t, wire.Events(roleChunk, chunk(`{"content":"hi"}`, ""), chunk(`{}`, "stop"), done)), backup: wire.Start(t, wire.Events(roleChunk, chunk(`{"content":"hi"}`, ""), chunk(`{}`, "stop"), done))}
	r.gw = wire.Gateway(t, wire.Env("CHAT", "openai", r.primary.URL+"/v1", r.backup.URL+"/v1", "PRIMARY__TIMEOUT_S", "0.2"), r.rec)
	r.client = openai.NewClient(optsFor(r.gw)...)
	r.primary.Next(wire.Hang(release, roleChunk))
	st := r.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	var got strings.Builder
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			got.WriteString(c.Choices[0].Delta.Content)
		}
	}
	require.NoError(t, st.Err())
	assert.Equal(t, "hi", got.String())
	assert.Equal(t, 1, r.backup.Count())
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

// A stream cut after its first content (the body ends without "data:
// [DONE]" or a finish reason): the SDK's error says the body ended early, as
// Go callers check for it, and the source is charged with a failure.
func TestOpenAIGoStreamCutAfterContentIsAnUnexpectedEOF(t *testing.T) {
	r := newGovRig(t, wire.Events(roleChunk, chunk(`{"content":"one "}`, "")), nil)
	st := r.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	var got string
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			got += c.Choices[0].Delta.Content
		}
	}
	assert.Equal(t, "one ", got)
	require.Error(t, st.Err())
	assert.ErrorIs(t, st.Err(), io.ErrUnexpectedEOF)
	_ = st.Close()
	require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
	assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
}

func optsFor(gw *pgw.GatewayClient) []option.RequestOption {
	return []option.RequestOption{option.WithBaseURL(pgw.SDKBaseURL), option.WithHTTPClient(gw.HTTPClient("CHAT")), option.WithMaxRetries(0)}
}
