package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// A proxy's key, which the transport never knew, echoed in an error answer
// as text and as Go encodes an http.Header: the HTTPError shows none of it.
func TestHTTPErrorShowsNoEchoedProxyKey(t *testing.T) {
	const proxyKey = "px-proxy-key-33333333"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"denied; sent Authorization: Bearer %s, x-api-key: %s","type":"invalid_request_error"}}`, proxyKey, proxyKey)
	}))
	t.Cleanup(srv.Close)
	src := transport.Source{Name: "a", BaseURL: srv.URL + "/v1", APIKey: config.NewSecret("sk-own-0123456789"), Model: "m"}
	_, err := openai.New().ChatStream(context.Background(), src, hello())
	var he *errs.HTTPError
	require.True(t, errors.As(err, &he), "%v", err)
	assert.NotContains(t, he.Message, proxyKey)
	assert.NotContains(t, fmt.Sprintf("%+v", err), proxyKey)
	assert.Contains(t, he.Message, "Authorization: Bearer [redacted], x-api-key: [redacted]")
}
