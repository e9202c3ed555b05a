package pgw_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// An Anthropic source's BASE_URL with its version path (as pgw's own
// Anthropic transport takes it) and one without (the SDK's own base URL)
// both get the SDK's "v1/messages" at /v1/messages.
func TestHTTPClientAnthropicBaseURLWithOrWithoutTheVersionPath(t *testing.T) {
	for _, suffix := range []string{"/v1", "/v1/", ""} {
		t.Run("base"+suffix, func(t *testing.T) {
			var mu sync.Mutex
			var paths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}`)
			}))
			t.Cleanup(srv.Close)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":              "CHAT",
				"CHAT__SOURCES":           "primary",
				"CHAT__CIRCUIT_OPEN":      "wait",
				"CHAT__PRIMARY__PROVIDER": "anthropic",
				"CHAT__PRIMARY__BASE_URL": srv.URL + suffix,
				"CHAT__PRIMARY__API_KEY":  "sk-primary",
			})
			req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"v1/messages", strings.NewReader(`{"model":"m","max_tokens":8,"messages":[]}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := gw.HTTPClient("CHAT").Do(req)
			require.NoError(t, err)
			readBody(t, resp)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"/v1/messages"}, paths)
		})
	}
}
