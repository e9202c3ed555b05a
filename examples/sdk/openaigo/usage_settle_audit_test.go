package main

// The token quota sees the usage openai-go's answers report, not only the
// estimate reserved from the request body: on a source whose TPM the first
// answer's usage fills, the next call goes to the backup. A JSON answer, an
// event stream with include_usage (its usage chunk after the finish reason),
// an embeddings answer, and CallStream with the example's options.

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// settleTPM is the primary's TPM; settleUsage fills it.
const settleTPM = "1000"

var settleUsage = `{"prompt_tokens":400,"completion_tokens":600,"total_tokens":1000}`

func settleStream() []string {
	return []string{
		roleChunk,
		chunk(`{"content":"Hello "}`, ""),
		chunk(`{"content":"there"}`, ""),
		chunk(`{}`, "stop"),
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":` + settleUsage + `}`,
		done,
	}
}

// settleTwice runs call twice on a rig whose primary has settleTPM and
// checks that the first call's reported usage filled it: the second call
// (then, when given, instead of call) is the backup's.
func settleTwice(t *testing.T, def http.HandlerFunc, call func(r *govRig) error, then ...func(r *govRig) error) *govRig {
	t.Helper()
	r := newGovRig(t, def, []string{"PRIMARY__TPM", settleTPM})
	require.NoError(t, call(r))
	att := r.rec.Attempts()
	require.Len(t, att, 1)
	assert.Equal(t, 1000, att[0].Usage.TotalTokens, "the attempt reports the answer's usage")
	if len(then) > 0 {
		call = then[0]
	}
	require.NoError(t, call(r))
	assert.Equal(t, 1, r.primary.Count(), "the primary's TPM is full of the first answer's usage")
	assert.Equal(t, 1, r.backup.Count())
	return r
}

func TestOpenAIGoSettlesAJSONAnswersUsage(t *testing.T) {
	answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + settleUsage + `}`
	settleTwice(t, wire.JSON(200, answer), func(r *govRig) error {
		_, err := r.ask(context.Background())
		return err
	})
}

func TestOpenAIGoSettlesAStreamsUsageChunk(t *testing.T) {
	settleTwice(t, wire.Events(settleStream()...), func(r *govRig) error {
		got, err := Stream(context.Background(), r.client, "hello")
		if err == nil {
			assert.Equal(t, "Hello there", got)
		}
		return err
	})
}

func TestOpenAIGoSettlesAnEmbeddingsUsage(t *testing.T) {
	answer := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1000,"total_tokens":1000}}`
	settleTwice(t, wire.JSON(200, answer), func(r *govRig) error {
		_, err := r.client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: openai.EmbeddingModelTextEmbedding3Small,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a b c"}},
		})
		return err
	})
}

// The example's StreamViaCallStream asks for usage: the chunk that reports
// it, after the finish reason, settles the quota. (The example reserves no
// estimate, so the call that finds the TPM full is one through the governed
// client, which reserves its body's.)
func TestStreamViaCallStreamSettlesTheUsageChunk(t *testing.T) {
	r := settleTwice(t, wire.Events(settleStream()...), func(r *govRig) error {
		got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
		if err == nil {
			assert.Equal(t, "Hello there", got)
		}
		return err
	}, func(r *govRig) error {
		_, err := Stream(context.Background(), r.client, "hello")
		return err
	})
	assert.Equal(t, []string{"primary:" + pgw.OutcomeSuccess, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

// With include_usage, a body cut after the finish reason but before the
// usage chunk lost the count the quota settles on: the example's terminal
// item is that chunk, so the cut is reported, as a cut before the finish
// reason is.
func TestStreamViaCallStreamWithoutItsUsageChunkIsACut(t *testing.T) {
	r := newGovRig(t, wire.Events(roleChunk, chunk(`{"content":"one"}`, ""), chunk(`{}`, "stop")), nil)
	_, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.Error(t, err)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
}
