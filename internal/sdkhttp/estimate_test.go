package sdkhttp_test

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/sdkhttp"
	"github.com/pgw-go/pgw/transport"
)

func TestEstimateTokensCountsABase64RunAsOneImage(t *testing.T) {
	text := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`
	assert.Equal(t, int64(len(text)+3)/4, sdkhttp.EstimateTokens([]byte(text), "application/json"), "text is four bytes a token")

	photo := strings.Repeat("iVBORw0KGgo+/AAA", 4096) // 64 KiB
	for name, body := range map[string]string{
		"data URI":          `{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + photo + `"}}]}`,
		"escaped slashes":   `{"content":[{"type":"image_url","image_url":{"url":"data:image\/png;base64,` + strings.ReplaceAll(photo, "/", `\/`) + `"}}]}`,
		"anthropic source":  `{"content":[{"type":"image","source":{"data":"` + photo + `","media_type":"image/png","type":"base64"}}]}`,
		"url-safe alphabet": `{"file_data":"data:application/pdf;base64,` + strings.ReplaceAll(strings.ReplaceAll(photo, "+", "-"), "/", "_") + `"}`,
	} {
		got := sdkhttp.EstimateTokens([]byte(body), "application/json")
		rest := len(body) - len(photo)
		if name == "escaped slashes" {
			rest = len(body) - len(strings.ReplaceAll(photo, "/", `\/`))
		}
		assert.InDelta(t, int64(rest+3)/4+transport.ImageTokenEstimate, got, 2, name)
	}

	two := `{"a":"data:image/png;base64,` + photo + `","b":"data:image/png;base64,` + photo + `"}`
	assert.InDelta(t, transport.ImageTokenEstimate*2, sdkhttp.EstimateTokens([]byte(two), "application/json"), 20, "two images")

	short := `{"a":"base64","b":"` + strings.Repeat("A", sdkhttp.MinBinaryRun-1) + `"}`
	assert.Equal(t, int64(len(short)+3)/4, sdkhttp.EstimateTokens([]byte(short), "application/json"), "a run shorter than MinBinaryRun is text")
}

func TestEstimateTokensCountsAFileAsOneImage(t *testing.T) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	require.NoError(t, w.WriteField("model", "gpt-4o-transcribe"))
	require.NoError(t, w.WriteField("prompt", strings.Repeat("word ", 80)))
	f, err := w.CreateFormFile("file", "clip.wav")
	require.NoError(t, err)
	_, err = f.Write(bytes.Repeat([]byte("RIFF\x00\x01WAVE"), 100000))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, int64(len("gpt-4o-transcribe")+3)/4+int64(400+3)/4+transport.ImageTokenEstimate,
		sdkhttp.EstimateTokens(b.Bytes(), w.FormDataContentType()), "text fields as text, the file as one")

	for _, ct := range []string{"audio/wav", "image/png", "video/mp4", "application/octet-stream", "Application/PDF"} {
		assert.Equal(t, int64(transport.ImageTokenEstimate), sdkhttp.EstimateTokens(bytes.Repeat([]byte{0x89}, 1<<20), ct), ct)
	}
	bad := strings.Repeat("not multipart ", 100)
	assert.Equal(t, int64(len(bad)+3)/4, sdkhttp.EstimateTokens([]byte(bad), "multipart/form-data; boundary=xyz"), "a body that does not parse counts as text")
	assert.Equal(t, int64(0), sdkhttp.EstimateTokens(nil, "application/json"))
}
