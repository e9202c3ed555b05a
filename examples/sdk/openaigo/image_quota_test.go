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

// An audio file goes as multipart/form-data: its bytes are not text either,
// and count as one file in the token estimate.
func TestOpenAIGoAudioUploadFitsAModestTPM(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, `{"text":"hello there"}`), []string{"PRIMARY__TPM", "30000", "BACKUP__TPM", "30000"})
	audio := strings.Repeat("RIFF\x00\x01WAVEfmt \x10\x00", 50000) // ~800 KB of binary
	resp, err := r.client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File:  openai.File(strings.NewReader(audio), "clip.wav", "audio/wav"),
		Model: openai.AudioModelGPTTranscribe,
	})
	require.NoError(t, err)
	assert.Equal(t, "hello there", resp.Text)
	require.Len(t, r.primary.Requests(), 1)
	assert.Contains(t, r.primary.Requests()[0].Header.Get("Content-Type"), "multipart/form-data")
	assert.Contains(t, string(r.primary.Requests()[0].Body), audio, "the file is sent whole")
}
