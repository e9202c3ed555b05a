package pgw_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/openai"
)

// hostRecorder is an http.RoundTripper that answers for every host: the
// first host it is told about answers 503, the others a short chat stream.
// It records each request's body by host.
type hostRecorder struct {
	down string

	mu     sync.Mutex
	bodies map[string]map[string]any
}

func (h *hostRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	h.mu.Lock()
	if h.bodies == nil {
		h.bodies = map[string]map[string]any{}
	}
	h.bodies[req.URL.Host] = m
	h.mu.Unlock()
	if req.URL.Host == h.down {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"error":{"message":"down","type":"server_error"}}`)), Request: req}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(oaEvents("stop", `{"content":"hi"}`))), Request: req}, nil
}

func (h *hostRecorder) body(host string) map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bodies[host]
}

// A scope of OpenAI's o4-mini and a vLLM server: the same request goes with
// max_completion_tokens to OpenAI (whose reasoning models refuse max_tokens)
// and with max_tokens to vLLM.
func TestChatLimitNameFollowsTheSourcesHost(t *testing.T) {
	rt := &hostRecorder{down: "api.openai.com"}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":               "CHAT",
		"CHAT__SOURCES":            "openai,vllm",
		"CHAT__OPENAI__BASE_URL":   "https://api.openai.com/v1",
		"CHAT__OPENAI__API_KEY":    "sk-proj-test",
		"CHAT__OPENAI__MODEL":      "o4-mini",
		"CHAT__OPENAI__MAX_TOKENS": "1024",
		"CHAT__VLLM__BASE_URL":     "http://vllm.internal:8000/v1",
		"CHAT__VLLM__MODEL":        "Qwen/Qwen3-8B",
		"CHAT__VLLM__PRIORITY":     "1",
		"CHAT__VLLM__MAX_TOKENS":   "1024",
	}, pgw.WithChatTransport(openai.New(openai.WithHTTPClient(&http.Client{Transport: rt}))))
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "vllm", resp.Source)

	oa := rt.body("api.openai.com")
	require.NotNil(t, oa, "OpenAI was tried first")
	assert.EqualValues(t, 1024, oa["max_completion_tokens"])
	assert.NotContains(t, oa, "max_tokens")

	vllm := rt.body("vllm.internal:8000")
	require.NotNil(t, vllm)
	assert.EqualValues(t, 1024, vllm["max_tokens"])
	assert.NotContains(t, vllm, "max_completion_tokens")
}
