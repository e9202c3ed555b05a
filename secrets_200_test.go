package pgw_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An OpenAI-compatible server that answers 200 with an error object which
// echoes the request's key and query: neither reaches the SDK, the
// observer's records or the logs, and the call fails as an error event of
// a stream does, not as an answer.
func TestHTTPClientErrorObjectInA200AnswerShowsNoCredential(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":"bad key %s for %s","type":"server_error","code":500}}`, r.Header.Get("Authorization"), r.URL.RawQuery)
	}))
	t.Cleanup(up.Close)
	gw, rec, logs := echoedGateway(t, up.URL)
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	body := readBody(t, resp)
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "an error object is no answer: %s", body)
	assert.True(t, json.Valid([]byte(body)), body)
	requireNoEchoedCredential(t, body, rec, logs)
}

// A 200 answer that is a resource whose "error" field says how it failed
// (a fine-tuning job, a background response) is an answer: the SDK gets it
// as sent, but for the credentials, and still as JSON.
func TestHTTPClientResourceWithAnErrorFieldIsAnAnswerShowingNoCredential(t *testing.T) {
	const token = "98765432"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"ftjob-1","object":"fine_tuning.job","status":"failed","error":{"code":"invalid_file","message":"file of account %s is bad","param":%s}}`,
			r.URL.Query().Get("account"), r.URL.Query().Get("account"))
	}))
	t.Cleanup(up.Close)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a",
		"CHAT__A__BASE_URL":  up.URL + "/v1?account=" + token,
		"CHAT__MAX_ATTEMPTS": "1",
	})
	resp := post(t, gw.HTTPClient("CHAT"), "fine_tuning/jobs", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.Equal(t, `{"id":"ftjob-1","object":"fine_tuning.job","status":"failed","error":{"code":"invalid_file","message":"file of account [redacted] is bad","param":"[redacted]"}}`, body)
	assert.Equal(t, fmt.Sprint(len(body)), resp.Header.Get("Content-Length"))
	for _, a := range rec.Attempts() {
		assert.NoError(t, a.Err)
	}
}
