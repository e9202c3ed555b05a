package pgw_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// An OpenAI-compatible server that answers 200 with an error object which
// echoes the request's key and query: neither reaches the SDK, the
// observer's records or the logs, and the call fails as an error event of
// a stream does, not as an answer.
func TestHTTPClientErrorObjectInA200AnswerShowsNoCredential(t *testing.T) {
	const key, token = "sk-live-0123456789", "tok-9876543210"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":"bad key %s for %s","type":"server_error","code":500}}`, r.Header.Get("Authorization"), r.URL.RawQuery)
	}))
	t.Cleanup(up.Close)
	logs := &syncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a",
		"CHAT__A__BASE_URL":  up.URL + "/v1?token=" + token,
		"CHAT__A__API_KEY":   key,
		"CHAT__MAX_ATTEMPTS": "1",
	}, pgw.WithLogger(l))
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	body := readBody(t, resp)
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "an error object is no answer: %s", body)
	require.Contains(t, body, "redacted", "the upstream's text reaches the SDK, redacted")
	assert.NotContains(t, body, key)
	assert.NotContains(t, body, token)
	assert.True(t, json.Valid([]byte(body)), body)
	atts := rec.Attempts()
	require.NotEmpty(t, atts)
	for _, a := range atts {
		require.Error(t, a.Err)
		assert.NotContains(t, a.Err.Error(), key)
		assert.NotContains(t, a.Err.Error(), token)
	}
	assert.NotContains(t, logs.String(), key)
	assert.NotContains(t, logs.String(), token)
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
