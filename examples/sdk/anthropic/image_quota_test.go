package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// An image block carries the picture as base64 text in the request body:
// the token estimate the governed client reserves counts it as an image,
// not as text, so a source with a modest TPM takes the prompt.
func TestAnthropicSDKImagePromptFitsAModestTPM(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), []string{"PRIMARY__TPM", "30000", "BACKUP__TPM", "30000"})
	photo := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG pixels ", 20000))) // ~320 KB of base64
	resp, err := r.client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("What is in this picture?"),
			anthropic.NewImageBlockBase64("image/png", photo),
		)},
	})
	require.NoError(t, err)
	require.NotEmpty(t, resp.Content)
	assert.Equal(t, "hi", resp.Content[0].Text)
	assert.Equal(t, 1, r.primary.Count())
	assert.Equal(t, 0, r.backup.Count())
}
