package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/transport"
)

// A proxy's key, which the transport never knew, echoed in an error
// answer: the HTTPError shows none of it.
func TestHTTPErrorShowsNoEchoedProxyKey(t *testing.T) {
	const proxyKey = "px-proxy-key-33333333"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"permission_error","message":"denied; sent x-api-key: %s"},"headers":{"X-Api-Key":["%s"]}}`, proxyKey, proxyKey)
	}))
	t.Cleanup(srv.Close)
	src := transport.Source{Name: "a", Provider: config.ProviderAnthropic, BaseURL: srv.URL + "/v1", APIKey: config.NewSecret("sk-ant-own-0123456789"), Model: "m"}
	_, err := anthropic.New().ChatStream(context.Background(), src, transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "hi"}}})
	var he *errs.HTTPError
	require.True(t, errors.As(err, &he), "%v", err)
	assert.NotContains(t, he.Message, proxyKey)
	assert.NotContains(t, fmt.Sprintf("%+v", err), proxyKey)
	assert.Contains(t, he.Message, "x-api-key: [redacted]")
}
