package sdkhttp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/internal/sdkhttp"
	"github.com/pgw-go/pgw/transport"
)

func TestEstimateTokensCountsABase64RunAsOneImage(t *testing.T) {
	text := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`
	assert.Equal(t, int64(len(text)+3)/4, sdkhttp.EstimateTokens([]byte(text)), "text is four bytes a token")

	photo := strings.Repeat("iVBORw0KGgo+/AAA", 4096) // 64 KiB
	for name, body := range map[string]string{
		"data URI":          `{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + photo + `"}}]}`,
		"escaped slashes":   `{"content":[{"type":"image_url","image_url":{"url":"data:image\/png;base64,` + strings.ReplaceAll(photo, "/", `\/`) + `"}}]}`,
		"anthropic source":  `{"content":[{"type":"image","source":{"data":"` + photo + `","media_type":"image/png","type":"base64"}}]}`,
		"url-safe alphabet": `{"file_data":"data:application/pdf;base64,` + strings.ReplaceAll(strings.ReplaceAll(photo, "+", "-"), "/", "_") + `"}`,
	} {
		got := sdkhttp.EstimateTokens([]byte(body))
		rest := len(body) - len(photo)
		if name == "escaped slashes" {
			rest = len(body) - len(strings.ReplaceAll(photo, "/", `\/`))
		}
		assert.InDelta(t, int64(rest+3)/4+transport.ImageTokenEstimate, got, 2, name)
	}

	two := `{"a":"data:image/png;base64,` + photo + `","b":"data:image/png;base64,` + photo + `"}`
	assert.InDelta(t, transport.ImageTokenEstimate*2, sdkhttp.EstimateTokens([]byte(two)), 20, "two images")

	short := `{"a":"base64","b":"` + strings.Repeat("A", sdkhttp.MinBinaryRun-1) + `"}`
	assert.Equal(t, int64(len(short)+3)/4, sdkhttp.EstimateTokens([]byte(short)), "a run shorter than MinBinaryRun is text")
}
