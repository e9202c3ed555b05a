package openai_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/openai"
)

func TestChatStreamDeltaContentForms(t *testing.T) {
	event := func(content string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":` + content + `},"finish_reason":null}]}` + "\n\n"
	}
	const end = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"plain string", `"héllo"`, "héllo"},
		{"string with escapes", `"a\"b\\c\n\u00e9\ud83d\ude00\/"`, "a\"b\\c\né😀/"},
		{"invalid UTF-8 is replaced as in any JSON string", "\"a\xffb\"", "a\uFFFDb"},
		{"text parts concatenated", `[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]`, "Hello"},
		{"part without a type is text", `[{"text":"Hello"}]`, "Hello"},
		{"thinking and reference parts are not the answer", `[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"reference","reference_ids":[1]},{"type":"text","text":"Hello"}]`, "Hello"},
		{"empty array", `[]`, ""},
		{"null", `null`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := event(`"<"`) + event(tt.content) + event(`">"`) + end
			st, err := openai.New().ChatStream(testCtx(t), rawSSE(t, body), hello())
			require.NoError(t, err)
			chunks, err := collect(t, st)
			require.NoError(t, err)
			assert.Equal(t, "<"+tt.want+">", text(chunks))
		})
	}
}

func TestChatStreamDeltaContentThatIsNeitherStringNorPartsIsAnError(t *testing.T) {
	for _, content := range []string{`{"type":"text","text":"x"}`, `42`, `["x"]`} {
		t.Run(content, func(t *testing.T) {
			body := `data: {"choices":[{"index":0,"delta":{"content":` + content + `},"finish_reason":null}]}` + "\n\n"
			st, err := openai.New().ChatStream(testCtx(t), rawSSE(t, body), hello())
			require.NoError(t, err)
			_, err = collect(t, st)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "decode chat chunk 1")
			assert.NotErrorIs(t, err, openai.ErrStreamCut)
		})
	}
}
