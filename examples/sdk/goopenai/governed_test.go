package main

// These tests use go-openai as its users do — through pgw's governed client,
// and inside pgw.Call — against scripted upstreams speaking OpenAI's wire
// format, and check what pgw did and the error the SDK returns.

import (
	"context"
	"io"
	"net/http"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

func openAIError(code, msg string) string {
	return `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":null,"code":"` + code + `"}}`
}

var textStream = []string{
	chunk(`{"role":"assistant","content":""}`, ""),
	chunk(`{"content":"Hello "}`, ""),
	chunk(`{"content":"there"}`, ""),
	chunk(`{}`, "stop"),
	"data: [DONE]",
}

type govRig struct {
	gw              *pgw.GatewayClient
	rec             *wire.Recorder
	primary, backup *wire.Server
	client          *goopenai.Client
}

func newGovRig(t *testing.T, def http.HandlerFunc, extra ...string) *govRig {
	t.Helper()
	r := &govRig{rec: &wire.Recorder{}, primary: wire.Start(t, def), backup: wire.Start(t, def)}
	r.gw = wire.Gateway(t, wire.Env("CHAT", "openai", r.primary.URL+"/v1", r.backup.URL+"/v1", extra...), r.rec)
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL, cfg.HTTPClient = pgw.SDKBaseURL, r.gw.HTTPClient("CHAT")
	r.client = goopenai.NewClientWithConfig(cfg)
	return r
}

func TestGoOpenAIStreamFailsOverOn429WithRetryAfter(t *testing.T) {
	r := newGovRig(t, wire.Events(textStream...))
	r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "25"))
	got, err := Stream(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	att := r.rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, int64(25), int64(att[0].RetryAfter.Seconds()), "pgw read the Retry-After go-openai's errors would lose")
	assert.Equal(t, "Bearer sk-backup", r.backup.Requests()[0].Header.Get("Authorization"))
	got, err = Stream(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	assert.Equal(t, 1, r.primary.Count(), "held off")
}

func TestGoOpenAIErrorMapping(t *testing.T) {
	t.Run("400 is the upstream's APIError", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, completion))
		r.primary.Next(wire.JSON(400, openAIError("invalid_value", "bad temperature")))
		_, err := Ask(context.Background(), r.client, "hello")
		var apiErr *goopenai.APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 400, apiErr.HTTPStatusCode)
		assert.Equal(t, "invalid_value", apiErr.Code)
		assert.Equal(t, 0, r.backup.Count())
	})
	t.Run("a stream's 400 too", func(t *testing.T) {
		r := newGovRig(t, wire.Events(textStream...))
		r.primary.Next(wire.JSON(400, openAIError("invalid_value", "bad temperature")))
		_, err := Stream(context.Background(), r.client, "hello")
		var apiErr *goopenai.APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 400, apiErr.HTTPStatusCode)
		assert.Equal(t, 0, r.backup.Count())
	})
	t.Run("401 everywhere: the verdict's code", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(401, openAIError("invalid_api_key", "no")))
		_, err := Ask(context.Background(), r.client, "hello")
		var apiErr *goopenai.APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, pgw.SDKVerdictStatus, apiErr.HTTPStatusCode)
		assert.Equal(t, pgw.CodeCircuitOpen, apiErr.Code)
		assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
		assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "backup").State)
	})
}

func TestGoOpenAIStreamClosedEarlyGivesTheSlotBack(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newGovRig(t, wire.JSON(200, completion), "PRIMARY__MAX_IN_FLIGHT", "1", "BACKUP__MAX_IN_FLIGHT", "1")
	r.primary.Next(wire.Hang(release, textStream[:2]...))
	st, err := r.client.CreateChatCompletionStream(context.Background(), request("hello"))
	require.NoError(t, err)
	var got string
	for got == "" {
		c, err := st.Recv()
		require.NoError(t, err)
		if len(c.Choices) > 0 {
			got = c.Choices[0].Delta.Content
		}
	}
	assert.Equal(t, "Hello ", got)
	st.Close()
	_, err = Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Equal(t, 2, r.primary.Count())
	assert.Equal(t, 0, r.backup.Count())
	assert.Equal(t, pgw.OutcomeAbandoned, r.rec.Attempts()[0].Outcome)
}

// go-openai inside pgw.Call, with no mapping code: its APIError carries the
// status, which pgw classifies.
func TestGoOpenAIErrorsInsideCallAreUnderstood(t *testing.T) {
	call := func(r *govRig) (string, error) {
		return pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			cfg := goopenai.DefaultConfig(src.APIKey.Reveal())
			cfg.BaseURL = src.BaseURL
			resp, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, request("hello"))
			if err != nil {
				return "", pgw.Usage{}, err
			}
			return resp.Choices[0].Message.Content, pgw.Usage{TotalTokens: resp.Usage.TotalTokens}, nil
		})
	}
	t.Run("401 opens the breaker", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, completion))
		r.primary.Next(wire.JSON(401, openAIError("invalid_api_key", "no")))
		got, err := call(r)
		require.NoError(t, err)
		assert.Equal(t, "hi", got)
		assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
	})
	t.Run("429 fails over without a breaker failure", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, completion))
		r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "25"))
		_, err := call(r)
		require.NoError(t, err)
		assert.Equal(t, pgw.OutcomeThrottle, r.rec.Attempts()[0].Outcome)
		assert.Equal(t, 0, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
	})
	t.Run("400 comes back at once as go-openai's error", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, completion))
		r.primary.Next(wire.JSON(400, openAIError("invalid_value", "bad")))
		_, err := call(r)
		var apiErr *goopenai.APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 400, apiErr.HTTPStatusCode)
		assert.Equal(t, 0, r.backup.Count())
	})
	t.Run("a non-JSON 502 fails over", func(t *testing.T) {
		r := newGovRig(t, wire.JSON(200, completion))
		r.primary.Next(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		})
		_, err := call(r)
		require.NoError(t, err)
		assert.Equal(t, pgw.OutcomeFailure, r.rec.Attempts()[0].Outcome)
		assert.Equal(t, 502, r.rec.Attempts()[0].Status)
	})
}
