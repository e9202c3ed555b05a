package main

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

func respEv(name, data string) string { return "event: " + name + "\ndata: " + data }

const respObject = `{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","error":null,"instructions":"You are terse.","model":"gpt-4o-mini","output":[],"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"usage":null,"metadata":{}}`

// The Responses API streams typed events: the governed client reads ahead
// past the response's creation to its first text, fails over a source
// that fails before it, and settles the usage of response.completed.
func TestOpenAIGoResponsesStreamFailsOverBeforeItsFirstText(t *testing.T) {
	stream := wire.Events(
		respEv("response.created", `{"type":"response.created","sequence_number":0,"response":`+respObject+`}`),
		respEv("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`),
		respEv("response.content_part.added", `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`),
		respEv("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello "}`),
		respEv("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"there"}`),
		respEv("response.completed", `{"type":"response.completed","sequence_number":5,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","error":null,"model":"gpt-4o-mini","output":[],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":8},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}}}`),
	)
	r := newGovRig(t, stream, nil)
	// The primary fails after the response's creation, before any text.
	r.primary.Next(wire.Events(
		respEv("response.created", `{"type":"response.created","sequence_number":0,"response":`+respObject+`}`),
		respEv("response.failed", `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}}`),
	))
	st := r.client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model:        "gpt-4o-mini",
		Instructions: openai.String("You are terse."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
	})
	var text strings.Builder
	var types []string
	for st.Next() {
		e := st.Current()
		types = append(types, e.Type)
		if e.Type == "response.output_text.delta" {
			text.WriteString(e.Delta)
		}
	}
	require.NoError(t, st.Err())
	require.NoError(t, st.Close())
	assert.Equal(t, "Hello there", text.String())
	assert.Equal(t, "response.created", types[0], "the backup's preamble reaches the SDK, the primary's does not")
	assert.Equal(t, 1, strings.Count(strings.Join(types, ","), "response.created"))
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	att := r.rec.Attempts()
	assert.Equal(t, pgw.Usage{PromptTokens: 12, CompletionTokens: 2, TotalTokens: 14, CachedPromptTokens: 8}, att[1].Usage)
}
