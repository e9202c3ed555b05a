package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// pngBytes starts with the PNG signature, which is all detection reads.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRfake-image-bytes")

func TestOCRSendsTheImageAsADataURLWithThePrompt(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.OCR, testutil.Reply{Text: "INVOICE 42", Usage: &testutil.Usage{PromptTokens: 800, CompletionTokens: 3}})
	resp, err := openai.New().OCR(testCtx(t), sourceFor(u), transport.OCRRequest{Image: pngBytes})
	require.NoError(t, err)
	assert.Equal(t, "INVOICE 42", resp.Text)
	assert.Equal(t, transport.Usage{PromptTokens: 800, CompletionTokens: 3, TotalTokens: 803}, resp.Usage)

	got := u.LastRequest(testutil.OCR)
	assert.Equal(t, "/v1/chat/completions", got.Path)
	assert.Equal(t, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngBytes), got.ImageURL)
	assert.Equal(t, openai.DefaultOCRPrompt, got.Prompt)
	assert.False(t, got.Stream)
	assert.Equal(t, "Bearer "+testKey, got.Authorization)

	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type     string          `json:"type"`
				Text     string          `json:"text"`
				ImageURL json.RawMessage `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &body))
	require.Len(t, body.Messages, 1)
	assert.Equal(t, "user", body.Messages[0].Role)
	require.Len(t, body.Messages[0].Content, 2)
	assert.Equal(t, "text", body.Messages[0].Content[0].Type)
	assert.Equal(t, "image_url", body.Messages[0].Content[1].Type)
	assert.Zero(t, u.Requests(testutil.Chat), "an OCR request is not a text chat")
}

func TestOCRPromptAndMIMEFromTheRequest(t *testing.T) {
	u := testutil.NewUpstream(t)
	_, err := openai.New().OCR(testCtx(t), sourceFor(u), transport.OCRRequest{Image: []byte("jpeg?"), MIME: "image/jpeg", Prompt: "Read the table."})
	require.NoError(t, err)
	got := u.LastRequest(testutil.OCR)
	assert.True(t, strings.HasPrefix(got.ImageURL, "data:image/jpeg;base64,"), got.ImageURL)
	assert.Equal(t, "Read the table.", got.Prompt)
}

func TestDataURLDetectsTheImageType(t *testing.T) {
	tests := []struct {
		name  string
		image []byte
		mime  string
		want  string
	}{
		{name: "png", image: pngBytes, want: "data:image/png;base64,"},
		{name: "jpeg", image: []byte("\xff\xd8\xff\xe0rest"), want: "data:image/jpeg;base64,"},
		{name: "given type wins", image: pngBytes, mime: "image/webp", want: "data:image/webp;base64,"},
		{name: "text has its parameters dropped", image: []byte("hello"), want: "data:text/plain;base64,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := openai.DataURL(tt.image, tt.mime)
			assert.Equal(t, tt.want+base64.StdEncoding.EncodeToString(tt.image), got)
		})
	}
}
