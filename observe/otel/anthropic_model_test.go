package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
)

// anthropicSSE is a whole Messages stream whose message_start names the
// dated model that answered, as Anthropic does for an alias.
func anthropicSSE(model string) string {
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	return ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"usage":{"input_tokens":11,"cache_read_input_tokens":4,"output_tokens":1}}}`, model)) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
}

// An Anthropic source's attempt names the model that answered
// (gen_ai.response.model, from message_start) on its span and on the GenAI
// metrics, as an OpenAI source's does, and counts cached input tokens as
// input.
func TestAnthropicAttemptRecordsTheResponseModel(t *testing.T) {
	const dated = "claude-sonnet-4-5-20250929"
	answers := map[string]func(w http.ResponseWriter){
		"stream": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, anthropicSSE(dated))
		},
		"whole message": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"`+dated+`",`+
				`"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"cache_read_input_tokens":4,"output_tokens":3}}`)
		},
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) { anthropicResponseModel(t, answer) })
	}
}

func anthropicResponseModel(t *testing.T, answer func(w http.ResponseWriter)) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) }))
	t.Cleanup(srv.Close)
	r := newRig(t, map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "claude",
		"CHAT__CLAUDE__BASE_URL": srv.URL + "/v1",
		"CHAT__CLAUDE__MODEL":    "claude-sonnet-4-5",
		"CHAT__CLAUDE__PROVIDER": "anthropic",
	})
	resp, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	require.Equal(t, "hi", resp.Content)

	atts := r.ended()["chat claude-sonnet-4-5"]
	require.Len(t, atts, 1)
	a := attrs(atts[0].Attributes)
	assert.Equal(t, "anthropic", a["gen_ai.provider.name"])
	assert.Equal(t, "claude-sonnet-4-5", a["gen_ai.request.model"])
	assert.Equal(t, "claude-sonnet-4-5-20250929", a["gen_ai.response.model"])
	assert.Equal(t, int64(15), a["gen_ai.usage.input_tokens"], "cached input tokens are input tokens")
	assert.Equal(t, int64(3), a["gen_ai.usage.output_tokens"])

	dur, ok := r.metrics(t)["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, dur.DataPoints, 1)
	rm, ok := dur.DataPoints[0].Attributes.Value("gen_ai.response.model")
	assert.True(t, ok, "the duration metric names the response model")
	assert.Equal(t, "claude-sonnet-4-5-20250929", rm.AsString())
}
