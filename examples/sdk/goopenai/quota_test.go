package main

import (
	"context"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// A 429 that says the account's quota is spent is not a rate limit: no
// wait makes the source answer, so its breaker opens, as when pgw reads the
// answer itself. go-openai's error keeps the code, not the body.
func TestGoOpenAISpentQuotaInsideCallOpensTheBreaker(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion))
	r.primary.Next(wire.JSON(429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
	got, err := pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		cfg := goopenai.DefaultConfig(src.APIKey.Reveal())
		cfg.BaseURL = src.BaseURL
		resp, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, request("hello"))
		if err != nil {
			return "", pgw.Usage{}, err
		}
		return resp.Choices[0].Message.Content, pgw.Usage{TotalTokens: resp.Usage.TotalTokens}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
}
