package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// auditEOWire answers every request with a fixed status and body and keeps
// the last request's body, whatever its host.
type auditEOWire struct {
	mu     sync.Mutex
	status int
	answer string
	ctype  string
	body   map[string]any
}

func (h *auditEOWire) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	h.mu.Lock()
	h.body = m
	h.mu.Unlock()
	status, ctype := h.status, h.ctype
	if status == 0 {
		status = http.StatusOK
	}
	if ctype == "" {
		ctype = "application/json"
	}
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {ctype}},
		Body: io.NopCloser(strings.NewReader(h.answer)), Request: req,
	}, nil
}

func (h *auditEOWire) sentBody() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.body
}

func auditEOClient(h *auditEOWire) *openai.Client {
	return openai.New(openai.WithHTTPClient(&http.Client{Transport: h}))
}

func auditEOSource(baseURL string) transport.Source {
	return transport.Source{Name: "emb", BaseURL: baseURL, APIKey: config.NewSecret(testKey), Model: "text-embedding-3-small"}
}

// The embeddings body holds what the API reference takes, and nothing else:
// model, the inputs as an array (a single input too), encoding_format float.
func TestEmbedAuditBodyHoldsModelInputArrayAndFloatEncodingOnly(t *testing.T) {
	h := &auditEOWire{answer: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}`}
	resp, err := auditEOClient(h).Embed(testCtx(t), auditEOSource("https://api.openai.com/v1"), transport.EmbedRequest{Inputs: []string{"  "}})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{0.5}}, resp.Vectors)
	assert.Equal(t, transport.Usage{PromptTokens: 2, TotalTokens: 2}, resp.Usage, "an embeddings usage has no completion tokens")
	assert.Equal(t, map[string]any{
		"model": "text-embedding-3-small", "input": []any{"  "}, "encoding_format": "float",
	}, h.sentBody())
}

// Vectors are placed by index; fields the gateway does not read are ignored;
// a server that sends no index at all is read in list order; one that
// indexes only some vectors, or sends an empty vector, is refused.
func TestEmbedAuditIndexAbsentExtraFieldsAndEmptyVectors(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   [][]float32
		err    string
	}{
		{
			name:   "reversed with extra fields",
			answer: `{"object":"list","id":"x","data":[{"object":"embedding","index":2,"embedding":[3],"extra":true},{"index":0,"embedding":[1]},{"index":1,"embedding":[2]}],"usage":{"prompt_tokens":3,"total_tokens":3,"new_field":{"a":1}}}`,
			want:   [][]float32{{1}, {2}, {3}},
		},
		{
			name:   "no index at all",
			answer: `{"data":[{"embedding":[1]},{"embedding":[2]},{"embedding":[3]}]}`,
			want:   [][]float32{{1}, {2}, {3}},
		},
		{
			name:   "index on some only",
			answer: `{"data":[{"index":1,"embedding":[2]},{"embedding":[1]},{"index":2,"embedding":[3]}]}`,
			err:    "vector 1 of the list has no index",
		},
		{
			name:   "empty vector",
			answer: `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[]},{"index":2,"embedding":[3]}]}`,
			err:    "vector index 1 is empty",
		},
		{
			name:   "null vector",
			answer: `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":null},{"index":2,"embedding":[3]}]}`,
			err:    "vector index 1 is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &auditEOWire{answer: tt.answer}
			resp, err := auditEOClient(h).Embed(testCtx(t), auditEOSource("http://embed.internal/v1"), transport.EmbedRequest{Inputs: []string{"a", "b", "c"}})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.Contains(t, err.Error(), `source "emb"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Vectors)
		})
	}
}

// An upstream error body becomes an *HTTPError carrying its status and the
// upstream's message.
func TestEmbedAuditErrorBodyIsAnHTTPErrorWithTheUpstreamsMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"input","code":null}}`)
	}))
	t.Cleanup(srv.Close)
	_, err := openai.New().Embed(testCtx(t), auditEOSource(srv.URL), transport.EmbedRequest{Inputs: []string{"long"}})
	var he *transport.HTTPError
	require.True(t, errors.As(err, &he), "%T %v", err, err)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Contains(t, he.Message, "maximum context length is 8192 tokens")
	assert.Equal(t, "/embeddings", he.Path)
}

// The source's MAX_TOKENS bounds an OCR answer as it bounds a chat answer:
// max_completion_tokens on OpenAI's own API, max_tokens elsewhere, nothing
// when unset.
func TestOCRAuditSendsTheSourcesMaxTokens(t *testing.T) {
	const completion = `{"choices":[{"index":0,"message":{"role":"assistant","content":"TEXT"},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":2,"total_tokens":902}}`
	tests := []struct {
		name    string
		baseURL string
		max     int
		want    map[string]any
	}{
		{name: "OpenAI", baseURL: "https://api.openai.com/v1", max: 2000, want: map[string]any{"max_completion_tokens": 2000.0}},
		{name: "compatible", baseURL: "https://api.mistral.ai/v1", max: 2000, want: map[string]any{"max_tokens": 2000.0}},
		{name: "unset", baseURL: "https://api.openai.com/v1", want: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &auditEOWire{answer: completion}
			src := auditEOSource(tt.baseURL)
			src.MaxTokens = tt.max
			resp, err := auditEOClient(h).OCR(testCtx(t), src, transport.OCRRequest{Image: pngBytes})
			require.NoError(t, err)
			assert.Equal(t, "TEXT", resp.Text)
			assert.Equal(t, transport.Usage{PromptTokens: 900, CompletionTokens: 2, TotalTokens: 902}, resp.Usage)
			got := map[string]any{}
			for _, k := range []string{"max_tokens", "max_completion_tokens"} {
				if v, ok := h.sentBody()[k]; ok {
					got[k] = v
				}
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, false, h.sentBody()["stream"])
		})
	}
}

// An OCR answer with an error object, or without choices, is an error, not
// an empty transcription.
func TestOCRAuditErrorAnswersAreErrors(t *testing.T) {
	for name, answer := range map[string]string{
		"error object": `{"error":{"message":"image too large","type":"invalid_request_error"}}`,
		"no choices":   `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := &auditEOWire{answer: answer}
			_, err := auditEOClient(h).OCR(testCtx(t), auditEOSource("http://ocr.internal/v1"), transport.OCRRequest{Image: pngBytes})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "emb")
		})
	}
}

// auditEOURLs records each request's URL and api-key header.
type auditEOURLs struct {
	auditEOWire
	urls, keys, auths []string
}

func (h *auditEOURLs) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.urls = append(h.urls, req.URL.String())
	h.keys = append(h.keys, req.Header.Get("api-key"))
	h.auths = append(h.auths, req.Header.Get("Authorization"))
	h.mu.Unlock()
	return h.auditEOWire.RoundTrip(req)
}

// On an azure source, embeddings and OCR go to the deployment's path with
// the api-version query kept, and the key travels in api-key alone.
func TestEmbedAndOCRAuditOnAzureKeepTheDeploymentPathQueryAndKeyHeader(t *testing.T) {
	src := transport.Source{
		Name: "az", Provider: config.ProviderAzure, APIKey: config.NewSecret(testKey),
		BaseURL: "https://res.openai.azure.com/openai/deployments/dep?api-version=2024-10-21",
	}
	h := &auditEOURLs{}
	c := openai.New(openai.WithHTTPClient(&http.Client{Transport: h}))
	h.answer = `{"data":[{"index":0,"embedding":[1]}]}`
	_, err := c.Embed(testCtx(t), src, transport.EmbedRequest{Inputs: []string{"a"}})
	require.NoError(t, err)
	h.answer = `{"choices":[{"index":0,"message":{"role":"assistant","content":"T"},"finish_reason":"stop"}]}`
	_, err = c.OCR(testCtx(t), src, transport.OCRRequest{Image: pngBytes})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"https://res.openai.azure.com/openai/deployments/dep/embeddings?api-version=2024-10-21",
		"https://res.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2024-10-21",
	}, h.urls)
	assert.Equal(t, []string{testKey, testKey}, h.keys)
	assert.Equal(t, []string{"", ""}, h.auths)
}

// A transcription cut by the answer's bound, or a refusal, is told in the
// response, not passed off as a whole, empty or not.
func TestOCRAuditReportsTheFinishReasonAndARefusal(t *testing.T) {
	h := &auditEOWire{answer: `{"choices":[{"index":0,"message":{"role":"assistant","content":"HALF OF THE"},"finish_reason":"length"}]}`}
	resp, err := auditEOClient(h).OCR(testCtx(t), auditEOSource("http://ocr.internal/v1"), transport.OCRRequest{Image: pngBytes})
	require.NoError(t, err)
	assert.Equal(t, transport.OCRResponse{Text: "HALF OF THE", FinishReason: "length"}, resp)

	h.answer = `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't read this document."},"finish_reason":"stop"}]}`
	resp, err = auditEOClient(h).OCR(testCtx(t), auditEOSource("http://ocr.internal/v1"), transport.OCRRequest{Image: pngBytes})
	require.NoError(t, err)
	assert.Equal(t, transport.OCRResponse{FinishReason: "stop", Refusal: "I can't read this document."}, resp)
}
