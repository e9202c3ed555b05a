package main

// These tests use openai-go as its users do, through pgw's governed client,
// against scripted upstreams speaking OpenAI's wire format, and check what
// pgw did: which source got each request, the breaker's state, what the
// observer saw, and the error the SDK hands its caller.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
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

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

var (
	roleChunk  = chunk(`{"role":"assistant","content":""}`, "")
	usageChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	done       = "data: [DONE]"
)

func openAIError(code, msg string) string {
	return `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":null,"code":"` + code + `"}}`
}

type govRig struct {
	gw              *pgw.GatewayClient
	rec             *wire.Recorder
	primary, backup *wire.Server
	client          openai.Client
}

// newGovRig: two OpenAI sources on scripted servers answering def, a
// gateway with extra keys, an openai-go client set up as the docs say plus
// opts.
func newGovRig(t *testing.T, def http.HandlerFunc, extra []string, opts ...option.RequestOption) *govRig {
	t.Helper()
	r := &govRig{rec: &wire.Recorder{}, primary: wire.Start(t, def), backup: wire.Start(t, def)}
	r.gw = wire.Gateway(t, wire.Env("CHAT", "openai", r.primary.URL+"/v1", r.backup.URL+"/v1", extra...), r.rec)
	r.client = openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(r.gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
	}, opts...)...)
	return r
}

func (r *govRig) ask(ctx context.Context) (*openai.ChatCompletion, error) {
	return r.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
}

func TestOpenAIGo500FailsOverAndCountsOneFailure(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(500, openAIError("server_error", "boom")))
	resp, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	assert.Equal(t, 1, r.primary.Count())
	assert.Equal(t, 1, r.backup.Count())
	assert.Equal(t, "Bearer sk-backup", r.backup.Requests()[0].Header.Get("Authorization"))
	assert.Equal(t, 1, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	calls := r.rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, pgw.ResultSuccess, calls[0].Result)
	assert.Equal(t, 2, calls[0].Attempts)
}

func TestOpenAIGoRetryAfterFormsHoldTheSourceOff(t *testing.T) {
	for _, tc := range []struct {
		name, header, value string
		want                time.Duration
	}{
		{"seconds", "Retry-After", "30", 30 * time.Second},
		{"milliseconds", "retry-after-ms", "45000", 45 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newGovRig(t, wire.JSON(200, completion), nil)
			r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), tc.header, tc.value))
			_, err := r.ask(context.Background())
			require.NoError(t, err)
			require.Equal(t, 1, r.backup.Count(), "failed over at once")
			att := r.rec.Attempts()
			require.NotEmpty(t, att)
			assert.Equal(t, "primary", att[0].Source)
			assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
			assert.Equal(t, 429, att[0].Status)
			assert.Equal(t, tc.want, att[0].RetryAfter)
			// Held off: the next call goes straight to the backup.
			_, err = r.ask(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 1, r.primary.Count())
			assert.Equal(t, 2, r.backup.Count())
			assert.Equal(t, pgw.StateClosed, wire.State(t, r.gw, "CHAT", "primary").State, "a throttle is not a breaker failure")
		})
	}
}

func TestOpenAIGo401OpensTheBreakerAndTheBackupAnswers(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(401, openAIError("invalid_api_key", "Incorrect API key provided")))
	_, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
	var opened bool
	for _, s := range r.rec.States() {
		opened = opened || s.Source == "primary" && s.To == pgw.StateOpen
	}
	assert.True(t, opened, "the observer saw the primary open: %+v", r.rec.States())
	_, err = r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, r.primary.Count(), "an open source gets nothing")
}

func TestOpenAIGo400ComesBackAsTheSDKsErrorAtOnce(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(400, openAIError("context_length_exceeded", "too long")))
	_, err := r.ask(context.Background())
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
	assert.Equal(t, "context_length_exceeded", apiErr.Code)
	assert.Equal(t, "too long", apiErr.Message)
	assert.Equal(t, 0, r.backup.Count())
	assert.Equal(t, 0, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
	assert.Nil(t, pgw.ErrorFrom(err), "the upstream's own answer, not a pgw verdict")
}

// A user who forgot WithMaxRetries(0): the SDK's two retries must not
// re-run a call pgw ended, whatever ended it.
func TestOpenAIGoDefaultRetriesDoNotReRunAVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		code   string
	}{
		{"5xx everywhere", wire.JSON(500, openAIError("server_error", "boom")), pgw.CodeUnavailable},
		{"429 everywhere", wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "600"), pgw.CodeExhausted},
		{"401 everywhere", wire.JSON(401, openAIError("invalid_api_key", "no")), pgw.CodeCircuitOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newGovRig(t, tc.answer, []string{"MAX_ATTEMPTS", "4", "QUOTA_FULL", "fail_fast"}, option.WithMaxRetries(2))
			_, err := r.ask(context.Background())
			var apiErr *openai.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, pgw.SDKVerdictStatus, apiErr.StatusCode)
			assert.Equal(t, tc.code, apiErr.Code)
			require.NotNil(t, pgw.ErrorFrom(err))
			assert.Len(t, r.rec.Calls(), 1, "one governed call: the SDK did not retry it")
			assert.LessOrEqual(t, r.primary.Count()+r.backup.Count(), 4)
		})
	}
}

func TestOpenAIGoStreamWithToolCallsFailsOverBeforeContent(t *testing.T) {
	stream := wire.Events(
		roleChunk,
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
		done,
	)
	r := newGovRig(t, stream, nil)
	r.primary.Next(wire.JSON(503, openAIError("overloaded", "busy")))
	st := r.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	})
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	require.NoError(t, st.Err())
	require.Len(t, acc.Choices, 1)
	calls := acc.Choices[0].Message.ToolCalls
	require.Len(t, calls, 1)
	assert.Equal(t, "get_weather", calls[0].Function.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
	assert.Equal(t, int64(7), acc.Usage.TotalTokens)
	assert.Equal(t, 1, r.primary.Count())
	assert.Equal(t, 1, r.backup.Count())
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.backup.Requests()[0].Body, &body))
	assert.Len(t, body["tools"], 1, "the tools reach the backup")
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	att := r.rec.Attempts()
	assert.Equal(t, 7, att[len(att)-1].Usage.TotalTokens, "the usage chunk is what the attempt reports")
}

func floatsBase64(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestOpenAIGoEmbeddingsFailOverInTheirOwnScope(t *testing.T) {
	answer := func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Format string `json:"encoding_format"`
		}
		_ = json.NewDecoder(req.Body).Decode(&body)
		var emb any = []float32{0.5, -1}
		if body.Format == "base64" {
			emb = floatsBase64(0.5, -1)
		}
		b, _ := json.Marshal(map[string]any{"object": "list", "model": "text-embedding-3-small",
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": emb}},
			"usage": map[string]any{"prompt_tokens": 3, "total_tokens": 3}})
		wire.JSON(200, string(b))(w, req)
	}
	rec := &wire.Recorder{}
	primary, backup := wire.Start(t, answer), wire.Start(t, answer)
	primary.Next(wire.JSON(502, openAIError("bad_gateway", "upstream")))
	gw := wire.Gateway(t, wire.Env("EMBEDDING", "openai", primary.URL+"/v1", backup.URL+"/v1", "BACKUP__MODEL", "text-embedding-3-large"), rec)
	client := openai.NewClient(option.WithBaseURL(pgw.SDKBaseURL), option.WithHTTPClient(gw.HTTPClient("EMBEDDING")), option.WithMaxRetries(0))
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatFloat} {
		resp, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model:          openai.EmbeddingModelTextEmbedding3Small,
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a b c"}},
			EncodingFormat: format,
		})
		require.NoError(t, err, "format %q", format)
		require.Len(t, resp.Data, 1)
		assert.Equal(t, []float64{0.5, -1}, resp.Data[0].Embedding)
		assert.Equal(t, int64(3), resp.Usage.TotalTokens)
	}
	// The first call failed over; the second went back to the primary,
	// whose one failure opens nothing.
	require.Equal(t, 2, primary.Count())
	require.Equal(t, 1, backup.Count())
	assert.Equal(t, "/v1/embeddings", backup.Requests()[0].Path)
	assert.Contains(t, string(primary.Requests()[1].Body), `"model":"text-embedding-3-small"`, "no MODEL: the SDK's model goes through")
	var body map[string]any
	require.NoError(t, json.Unmarshal(backup.Requests()[0].Body, &body))
	assert.Equal(t, "text-embedding-3-large", body["model"], "the backup's MODEL replaces the SDK's")
}

// MAX_IN_FLIGHT=1 on the primary: a stream that held its slot must give it
// back however it ends early, or the next call would go to the backup.
func TestOpenAIGoStreamEndedEarlyGivesTheSlotBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(cancel context.CancelFunc, st interface{ Close() error })
	}{
		{"closed by the SDK", func(_ context.CancelFunc, st interface{ Close() error }) { _ = st.Close() }},
		{"caller's ctx cancelled", func(cancel context.CancelFunc, _ interface{ Close() error }) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			r := newGovRig(t, wire.JSON(200, completion), []string{"PRIMARY__MAX_IN_FLIGHT", "1", "BACKUP__MAX_IN_FLIGHT", "1"})
			r.primary.Next(wire.Hang(release, roleChunk, chunk(`{"content":"one "}`, "")))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := r.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
			})
			var got string
			for got == "" && st.Next() {
				if c := st.Current(); len(c.Choices) > 0 {
					got = c.Choices[0].Delta.Content
				}
			}
			require.Equal(t, "one ", got)
			tc.end(cancel, st)
			if tc.name == "caller's ctx cancelled" {
				assert.False(t, st.Next(), "the cancelled stream ends")
				assert.True(t, errors.Is(st.Err(), context.Canceled), "the SDK reports the cancellation: %v", st.Err())
			}
			// The next call is admitted on the primary, whose one slot is free again.
			require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
			_, err := r.ask(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 2, r.primary.Count(), "the primary's slot was given back")
			assert.Equal(t, 0, r.backup.Count())
			att := r.rec.Attempts()
			require.Len(t, att, 2)
			assert.Contains(t, []string{pgw.OutcomeAbandoned, pgw.OutcomeCanceled}, att[0].Outcome)
			assert.Equal(t, 0, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures, "an abandoned stream says nothing about the source")
			_ = st.Close()
		})
	}
}

// Both sources held off past the caller's deadline, under the default
// QUOTA_FULL=wait and with the SDK's retries left on: pgw ends the call at
// once with its verdict instead of sleeping into the deadline, and the SDK
// neither retries it nor waits for its Retry-After.
func TestOpenAIGoHoldOffPastTheDeadlineEndsAtOnceWithAVerdict(t *testing.T) {
	r := newGovRig(t, wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "120"), nil, option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.ask(ctx)
	require.NoError(t, ctx.Err(), "the call did not wait for the deadline")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, pgw.SDKVerdictStatus, apiErr.StatusCode)
	assert.Equal(t, pgw.CodeExhausted, apiErr.Code)
	assert.Equal(t, 1, r.primary.Count())
	assert.Equal(t, 1, r.backup.Count())
	assert.Len(t, r.rec.Calls(), 1)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, pgw.ErrorFrom(err), &ase)
	assert.Positive(t, ase.RetryAfter)
}

// A caller that gives up while pgw reads ahead to the first content event
// (the upstream sent only its role-only chunk) gets its cancellation, and
// the primary's one slot is free for the next call.
func TestOpenAIGoCancelBeforeTheFirstContentGivesTheSlotBack(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newGovRig(t, wire.JSON(200, completion), []string{"PRIMARY__MAX_IN_FLIGHT", "1", "BACKUP__MAX_IN_FLIGHT", "1"}, option.WithMaxRetries(2))
	started := make(chan struct{})
	hang := wire.Hang(release, roleChunk)
	r.primary.Next(func(w http.ResponseWriter, req *http.Request) { close(started); hang(w, req) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	st := r.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	assert.False(t, st.Next())
	assert.True(t, errors.Is(st.Err(), context.Canceled), "%v", st.Err())
	_ = st.Close()
	assert.Equal(t, 0, r.backup.Count(), "a cancellation is no reason to fail over")
	_, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, r.primary.Count(), "the primary's slot was given back")
	assert.Equal(t, 0, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
}
