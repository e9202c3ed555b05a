package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// A photo sent as a data: URI is base64 text in the request body, hundreds
// of kilobytes of it: the token estimate the governed client reserves must
// count it as an image, not as text, or a source with a modest TPM refuses
// every image prompt.
func TestOpenAIGoImagePromptFitsAModestTPM(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), []string{"PRIMARY__TPM", "30000", "BACKUP__TPM", "30000"})
	photo := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG pixels ", 20000))) // ~320 KB of base64
	resp, err := r.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + photo}),
		})},
	})
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	assert.Equal(t, 1, r.primary.Count())
	assert.Equal(t, 0, r.backup.Count())
}
