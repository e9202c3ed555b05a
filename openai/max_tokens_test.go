package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// anyHost answers every request, whatever its host, with a short chat
// stream and records the request's URL and body: it lets a source point at
// api.openai.com without the test leaving the machine.
type anyHost struct {
	mu   sync.Mutex
	url  string
	body map[string]any
}

func (h *anyHost) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	h.mu.Lock()
	h.url, h.body = req.URL.String(), m
	h.mu.Unlock()
	const sse = `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(sse)), Request: req,
	}, nil
}

func (h *anyHost) sent(t *testing.T, baseURL string, srcMax int, req transport.ChatRequest) map[string]any {
	t.Helper()
	c := openai.New(openai.WithHTTPClient(&http.Client{Transport: h}))
	src := transport.Source{Name: "oa", BaseURL: baseURL, APIKey: config.NewSecret(testKey), Model: "o4-mini", MaxTokens: srcMax}
	st, err := c.ChatStream(testCtx(t), src, req)
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	require.True(t, strings.HasPrefix(h.url, strings.TrimSuffix(strings.SplitN(baseURL, "?", 2)[0], "/")), h.url)
	return h.body
}

func TestChatLimitIsMaxCompletionTokensOnOpenAIsOwnAPI(t *testing.T) {
	withMax := hello()
	withMax.MaxTokens = 64
	tests := []struct {
		name    string
		baseURL string
		srcMax  int
		req     transport.ChatRequest
		want    string // the key that carries the limit
		limit   float64
	}{
		{"OpenAI", "https://api.openai.com/v1", 0, withMax, "max_completion_tokens", 64},
		{"OpenAI, the source's MAX_TOKENS", "https://api.openai.com/v1", 512, hello(), "max_completion_tokens", 512},
		{"OpenAI, host in capitals and a port", "https://API.OpenAI.com:443/v1/", 0, withMax, "max_completion_tokens", 64},
		{"OpenAI's European data residency", "https://eu.api.openai.com/v1", 0, withMax, "max_completion_tokens", 64},
		{"a compatible server", "http://localhost:8000/v1", 0, withMax, "max_tokens", 64},
		{"Groq", "https://api.groq.com/openai/v1", 512, hello(), "max_tokens", 512},
		{"Azure", "https://res.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-06-01", 0, withMax, "max_tokens", 64},
		{"a host that only looks like OpenAI's", "https://api.openai.com.example.net/v1", 0, withMax, "max_tokens", 64},
		{"a proxy whose path names OpenAI", "https://proxy.internal/api.openai.com/v1", 0, withMax, "max_tokens", 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h anyHost
			body := h.sent(t, tt.baseURL, tt.srcMax, tt.req)
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tt.want]
			assert.Equal(t, tt.limit, body[tt.want], tt.want)
			assert.NotContains(t, body, other, "one name for the limit, never both")
		})
	}
}

func TestChatNoLimitSendsNeitherName(t *testing.T) {
	for _, base := range []string{"https://api.openai.com/v1", "http://localhost:8000/v1"} {
		var h anyHost
		body := h.sent(t, base, 0, hello())
		assert.NotContains(t, body, "max_tokens", base)
		assert.NotContains(t, body, "max_completion_tokens", base)
	}
}

// A user whose compatible host wants the new name (an o-series deployment
// on Azure, a proxy in front of OpenAI) names it in Extra: it is sent as
// given, and max_tokens is not sent beside it.
func TestChatExtraMaxCompletionTokensReplacesMaxTokens(t *testing.T) {
	for _, base := range []string{
		"https://res.openai.azure.com/openai/deployments/o4-mini?api-version=2024-12-01-preview",
		"http://litellm:4000/v1",
		"https://api.openai.com/v1",
	} {
		t.Run(base, func(t *testing.T) {
			req := hello()
			req.MaxTokens = 64
			req.Extra = map[string]any{"max_completion_tokens": 2048}
			var h anyHost
			body := h.sent(t, base, 512, req)
			assert.Equal(t, float64(2048), body["max_completion_tokens"])
			assert.NotContains(t, body, "max_tokens")
		})
	}
}

func TestChatExtraMaxTokensStaysRefused(t *testing.T) {
	req := hello()
	req.Extra = map[string]any{"max_tokens": 10}
	_, err := openai.New().ChatStream(testCtx(t), transport.Source{Name: "oa", BaseURL: "https://api.openai.com/v1"}, req)
	var re *transport.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Extra[max_tokens]", re.Field)
}

// Mistral's API answers an unknown key with a 422 (stream_options among
// them) and reports usage in every stream's last chunk unasked.
func TestChatStreamAsksNoStreamOptionsOfMistral(t *testing.T) {
	for base, want := range map[string]bool{
		"https://api.mistral.ai/v1":       false,
		"https://codestral.mistral.ai/v1": false,
		"https://api.openai.com/v1":       true,
		"http://vllm:8000/v1":             true, // a Mistral model served by vLLM
	} {
		t.Run(base, func(t *testing.T) {
			var h anyHost
			body := h.sent(t, base, 0, hello())
			if want {
				assert.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
			} else {
				assert.NotContains(t, body, "stream_options")
			}
			assert.Equal(t, true, body["stream"])
		})
	}
}

// Mistral's own API names the seed random_seed and refuses seed with a
// 422; every other host gets seed.
func TestChatSeedIsRandomSeedForMistral(t *testing.T) {
	seed := 42
	for base, key := range map[string]string{
		"https://api.mistral.ai/v1":       "random_seed",
		"https://codestral.mistral.ai/v1": "random_seed",
		"https://api.openai.com/v1":       "seed",
		"http://vllm:8000/v1":             "seed", // a Mistral model served by vLLM
	} {
		t.Run(base, func(t *testing.T) {
			req := hello()
			req.Seed = &seed
			var h anyHost
			body := h.sent(t, base, 0, req)
			assert.Equal(t, float64(42), body[key])
			other := map[string]string{"seed": "random_seed", "random_seed": "seed"}[key]
			assert.NotContains(t, body, other)
		})
	}
}

// On Mistral's API random_seed is Seed's key: Extra may add it when the
// request sets no Seed, and may not when it does.
func TestChatExtraRandomSeedOnMistral(t *testing.T) {
	const base = "https://api.mistral.ai/v1"
	req := hello()
	req.Extra = map[string]any{"random_seed": 7}
	var h anyHost
	body := h.sent(t, base, 0, req)
	assert.Equal(t, float64(7), body["random_seed"])
	assert.NotContains(t, body, "seed")

	seed := 42
	req.Seed = &seed
	src := transport.Source{Name: "mi", BaseURL: base}
	_, err := openai.New().ChatStream(testCtx(t), src, req)
	var re *transport.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Extra[random_seed]", re.Field)
	require.ErrorAs(t, openai.New().ValidateChat(src, req), &re, "refused before admission too")
	assert.Equal(t, "Extra[random_seed]", re.Field)

	body = h.sent(t, "https://api.openai.com/v1", 0, req) // elsewhere Extra's key is its own
	assert.Equal(t, float64(42), body["seed"])
	assert.Equal(t, float64(7), body["random_seed"])
}
