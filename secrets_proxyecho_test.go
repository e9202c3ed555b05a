package pgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// echoingProxy answers every request with status and a JSON error that
// echoes the credential headers of a proxy on the way, whose key pgw never
// knew: in the message as text, and as Go encodes an http.Header; with
// extra, more members of the answer's top level.
func echoingProxy(t *testing.T, status int, extra string) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers, _ := json.Marshal(http.Header{"Authorization": {"Bearer " + proxyKey}, "X-Api-Key": {proxyKey}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"%s; sent Authorization: Bearer %s, x-api-key: %s","type":"invalid_request_error"},"headers":%s%s}`,
			upstreamMsg, proxyKey, proxyKey, headers, extra)
	}))
	t.Cleanup(up.Close)
	return up
}

// A proxy that echoes its own key — one pgw does not know — in an error
// answer: through the governed http client the SDK's body (JSON still),
// the records and the logs show none of it.
// A 200 answer that names a resource whose "error" says how it failed (a
// background response) is passed on the same way.
func TestHTTPClientAnswerShowsNoEchoedProxyKey(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusOK} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			extra := ""
			if status == http.StatusOK {
				extra = `,"object":"response","id":"resp_1"`
			}
			up := echoingProxy(t, status, extra)
			gw, rec, logs := echoedGateway(t, up.URL)
			resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
			body := readBody(t, resp)
			assert.True(t, json.Valid([]byte(body)), body)
			assert.NotContains(t, body, proxyKey)
			assert.Contains(t, body, upstreamMsg)
			assert.Contains(t, body, "Authorization: Bearer [redacted]")
			requireCleanRecords(t, rec, logs)
		})
	}
}

// The same proxy in front of pgw's own transports (OpenAI's, Anthropic's):
// the error of a call, its %+v, its HTTPError's Message, the wrapper of the
// last attempt, the records and the logs show none of its key.
func TestTransportsShowNoEchoedProxyKey(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError} {
			t.Run(fmt.Sprintf("%s/%d", provider, status), func(t *testing.T) {
				up := echoingProxy(t, status, "")
				gw, rec, logs := echoedGateway(t, up.URL, "CHAT__A__PROVIDER", provider, "CHAT__MAX_ATTEMPTS", "2")
				_, err := gw.Chat(context.Background(), hello())
				require.Error(t, err)
				requireNoSecretIn(t, "err.Error()", err.Error())
				requireNoSecretIn(t, "%+v", fmt.Sprintf("%+v", err))
				assert.Contains(t, err.Error(), upstreamMsg)
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he)
				requireNoSecretIn(t, "HTTPError.Message", he.Message)
				assert.Contains(t, he.Message, "Authorization: Bearer [redacted]")
				requireCleanRecords(t, rec, logs)
			})
		}
	}
}

// An error event after content, passed on to the SDK as the upstream sent
// it, shows no key a proxy echoed in it either.
func TestHTTPClientStreamErrorEventShowsNoEchoedProxyKey(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunkHello)
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"proxy saw x-api-key: %s\",\"type\":\"server_error\"}}\n\n", proxyKey)
	}))
	t.Cleanup(up.Close)
	gw, rec, logs := echoedGateway(t, up.URL)
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	body := readBody(t, resp)
	require.Contains(t, body, "Hello")
	assert.Contains(t, body, "proxy saw x-api-key: [redacted]")
	assert.NotContains(t, body, proxyKey)
	requireCleanRecords(t, rec, logs)
}
