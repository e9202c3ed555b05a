package main

// The token quota sees the usage go-openai's answers report: on a source
// whose TPM the first answer's usage fills, the next call goes to the
// backup. A JSON answer, a stream with IncludeUsage, an embeddings answer,
// and pgw.CallStream around go-openai's own stream, whose Recv and Close
// are a pgw.Streamer as they are.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

const settleUsage = `{"prompt_tokens":400,"completion_tokens":600,"total_tokens":1000}`

var settleStream = []string{
	textStream[0], textStream[1], textStream[2], textStream[3],
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":` + settleUsage + `}`,
	"data: [DONE]",
}

func settleTwice(t *testing.T, def http.HandlerFunc, first, then func(r *govRig) error) *govRig {
	t.Helper()
	r := newGovRig(t, def, "PRIMARY__TPM", "1000")
	require.NoError(t, first(r))
	att := r.rec.Attempts()
	require.Len(t, att, 1)
	assert.Equal(t, 1000, att[0].Usage.TotalTokens, "the attempt reports the answer's usage")
	require.NoError(t, then(r))
	assert.Equal(t, 1, r.primary.Count(), "the primary's TPM is full of the first answer's usage")
	assert.Equal(t, 1, r.backup.Count())
	return r
}

func settleStreamed(r *govRig) error {
	req := request("hello")
	req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	st, err := r.client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func TestGoOpenAISettlesAJSONAnswersUsage(t *testing.T) {
	answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + settleUsage + `}`
	ask := func(r *govRig) error { _, err := Ask(context.Background(), r.client, "hello"); return err }
	settleTwice(t, wire.JSON(200, answer), ask, ask)
}

func TestGoOpenAISettlesAStreamsUsageChunk(t *testing.T) {
	settleTwice(t, wire.Events(settleStream...), settleStreamed, settleStreamed)
}

func TestGoOpenAISettlesAnEmbeddingsUsage(t *testing.T) {
	answer := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1000,"total_tokens":1000}}`
	embed := func(r *govRig) error {
		resp, err := r.client.CreateEmbeddings(context.Background(), goopenai.EmbeddingRequest{Input: []string{"a b c"}, Model: goopenai.SmallEmbedding3})
		if err == nil && len(resp.Data) != 1 {
			return errors.New("no embedding")
		}
		return err
	}
	settleTwice(t, wire.JSON(200, answer), embed, embed)
}

// callStream streams with go-openai's own stream under pgw.CallStream: the
// first chunk with content ends the retries, and the usage chunk — the last
// one with IncludeUsage — is the terminal item and settles the quota.
// go-openai's stream reports a body closed mid-answer as io.EOF, so only
// the terminal item tells it from a whole one.
func callStream(ctx context.Context, gw *pgw.GatewayClient) (string, error) {
	st, err := pgw.CallStream(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (pgw.Streamer[goopenai.ChatCompletionStreamResponse], error) {
		cfg := goopenai.DefaultConfig(src.APIKey.Reveal())
		cfg.BaseURL = src.BaseURL
		req := request("hello")
		req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
		return goopenai.NewClientWithConfig(cfg).CreateChatCompletionStream(ctx, req)
	},
		pgw.FirstItem(func(c goopenai.ChatCompletionStreamResponse) bool {
			return len(c.Choices) > 0 && (c.Choices[0].Delta.Content != "" || c.Choices[0].FinishReason != "")
		}),
		pgw.TerminalItem(func(c goopenai.ChatCompletionStreamResponse) bool { return len(c.Choices) == 0 && c.Usage != nil }),
		pgw.ItemUsage(func(c goopenai.ChatCompletionStreamResponse) (pgw.Usage, bool) {
			if c.Usage == nil {
				return pgw.Usage{}, false
			}
			return pgw.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.TotalTokens}, true
		}),
		pgw.EstimateTokens[goopenai.ChatCompletionStreamResponse](10))
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b []byte
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return string(b), nil
		}
		if err != nil {
			return string(b), err
		}
		if len(c.Choices) > 0 {
			b = append(b, c.Choices[0].Delta.Content...)
		}
	}
}

func TestGoOpenAIInsideCallStreamSettlesItsUsage(t *testing.T) {
	via := func(r *govRig) error {
		got, err := callStream(context.Background(), r.gw)
		if err == nil && got != "Hello there" {
			return errors.New("streamed " + got)
		}
		return err
	}
	r := settleTwice(t, wire.Events(settleStream...), via, via)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeSuccess, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

// A 429 before the first content fails over at once, its Retry-After held
// (go-openai's error keeps no headers, but its status is read); a body
// cut after content is the source's failure, not a success.
func TestGoOpenAIInsideCallStreamFailsOverAndCatchesACut(t *testing.T) {
	t.Run("429", func(t *testing.T) {
		r := newGovRig(t, wire.Events(settleStream...))
		r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "25"))
		got, err := callStream(context.Background(), r.gw)
		require.NoError(t, err)
		assert.Equal(t, "Hello there", got)
		assert.Equal(t, []string{"primary:" + pgw.OutcomeThrottle, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	})
	t.Run("cut", func(t *testing.T) {
		r := newGovRig(t, wire.Events(settleStream[:2]...))
		got, err := callStream(context.Background(), r.gw)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Equal(t, "Hello ", got)
		assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
		assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
	})
}
