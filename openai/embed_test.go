package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

func TestEmbedReturnsVectorsInInputOrder(t *testing.T) {
	u := testutil.NewUpstream(t) // lists vectors in reverse order
	inputs := []string{"alpha", "beta gamma", "delta"}
	resp, err := openai.New().Embed(testCtx(t), sourceFor(u), transport.EmbedRequest{Inputs: inputs})
	require.NoError(t, err)

	require.Len(t, resp.Vectors, len(inputs))
	for i, in := range inputs {
		assert.Equal(t, testutil.FakeEmbedding(in), resp.Vectors[i], "vector %d belongs to %q", i, in)
	}
	assert.Equal(t, transport.Usage{PromptTokens: 4, TotalTokens: 4}, resp.Usage)

	got := u.LastRequest(testutil.Embeddings)
	assert.Equal(t, "/v1/embeddings", got.Path)
	assert.Equal(t, inputs, got.Inputs)
	assert.Equal(t, "fake-model", got.Model)
	var body map[string]any
	require.NoError(t, json.Unmarshal(got.Body, &body))
	assert.Equal(t, "float", body["encoding_format"])
}

func TestEmbedEmptyBatchSendsNothing(t *testing.T) {
	u := testutil.NewUpstream(t)
	resp, err := openai.New().Embed(testCtx(t), sourceFor(u), transport.EmbedRequest{})
	require.NoError(t, err)
	assert.Empty(t, resp.Vectors)
	assert.Zero(t, u.TotalRequests())
}

func TestEmbedRejectsAnswersThatDoNotMatchTheInputs(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "too few vectors", body: `{"data":[{"index":0,"embedding":[1]}]}`, want: "got 1 vectors for 2 inputs"},
		{name: "index out of range", body: `{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[1]}]}`, want: "vector index 2 outside 0..1"},
		{name: "index twice", body: `{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[1]}]}`, want: "vector index 1 given twice"},
		{name: "not JSON", body: `oops`, want: "decode embeddings response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := openai.New().Embed(testCtx(t), transport.Source{Name: "odd", BaseURL: srv.URL}, transport.EmbedRequest{Inputs: []string{"a", "b"}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `source "odd"`)
		})
	}
}

func TestEmbedDeadlineBeforeTheAnswerReturnsDeadlineExceeded(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Embeddings, testutil.Reply{FirstTokenDelay: time.Hour})
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := openai.New().Embed(ctx, sourceFor(u), transport.EmbedRequest{Inputs: []string{"x"}})
	assert.Equal(t, context.DeadlineExceeded, err)
}
