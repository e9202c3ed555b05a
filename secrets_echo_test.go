package pgw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// An upstream whose event stream reports an error that echoes the request
// — its key, its URL's query — through the governed http client: neither
// shows in the SDK's answer, the observer's records or the logs.
func TestHTTPClientStreamErrorEventShowsNoCredential(t *testing.T) {
	const key, token = echoKey, echoToken
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("X-Content-First") != "" {
			fmt.Fprintf(w, "data: %s\n\n", chunkHello)
		}
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"bad key %s for %s\",\"type\":\"server_error\"}}\n\n", r.Header.Get("Authorization"), r.URL.RawQuery)
	}))
	t.Cleanup(up.Close)
	gw, rec, logs := echoedGateway(t, up.URL)
	body := readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true)))
	requireNoEchoedCredential(t, body, rec, logs)

	// After content the error event is passed on as the upstream sent it,
	// but for the credentials.
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(true)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Content-First", "1")
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Contains(t, string(b), "Hello")
	assert.Contains(t, string(b), "bad key Bearer [redacted] for token=[redacted]")
	for _, a := range rec.Attempts() {
		if a.Err != nil {
			assert.NotContains(t, a.Err.Error(), key)
			assert.NotContains(t, a.Err.Error(), token)
		}
	}
}

// sdkStatusError is an SDK's API error: a status and the answer's body.
type sdkStatusError struct {
	StatusCode int
	body       string
}

func (e *sdkStatusError) Error() string   { return fmt.Sprintf("sdk: status %d", e.StatusCode) }
func (e *sdkStatusError) RawJSON() string { return e.body }

// An SDK's error from a Call function is described as a *pgw.HTTPError
// whose Message shows none of the source's credentials, the BASE_URL's
// query values as well as the key.
func TestASDKErrorsDescriptionShowsNoCredential(t *testing.T) {
	const key, token = echoKey, echoToken
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": "http://127.0.0.1:1/v1?token=" + token,
		"CHAT__A__API_KEY":  key,
	})
	body := fmt.Sprintf(`{"error":{"message":"no model for key %s at ?token=%s","type":"invalid_request_error"}}`, key, token)
	_, err := pgw.Call(context.Background(), gw, "CHAT", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return "", pgw.Usage{}, &sdkStatusError{StatusCode: 400, body: body}
	})
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 400, he.StatusCode)
	assert.Contains(t, he.Message, "no model for key [redacted] at ?token=[redacted]")
	var se *sdkStatusError
	assert.ErrorAs(t, err, &se, "the SDK's own error is still reached")
}

// An upstream that redirects (keeping the query, as a redirect to HTTPS
// does) to where the connection then fails: the transport error names the
// redirect's URL, which shows none of the BASE_URL's query either.
func TestATransportErrorAfterARedirectShowsNoCredential(t *testing.T) {
	const token = "tok-9876543210"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/moved/") {
			http.Redirect(w, r, "/moved"+r.URL.Path+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(up.Close)
	for _, p := range []string{"openai", "anthropic"} {
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES":         "CHAT",
			"CHAT__SOURCES":      "a",
			"CHAT__MAX_ATTEMPTS": "1",
			"CHAT__A__PROVIDER":  p,
			"CHAT__A__MODEL":     "m",
			"CHAT__A__BASE_URL":  up.URL + "/v1?token=" + token,
		})
		_, err := gw.Chat(context.Background(), hello())
		require.Error(t, err, p)
		assert.NotContains(t, fmt.Sprintf("%+v", err), token, p)
		for _, a := range rec.Attempts() {
			require.Error(t, a.Err, p)
			assert.NotContains(t, a.Err.Error(), token, p)
		}
	}
}

// echoKey and echoToken are the credentials of echoedGateway's source: its
// API key and a value of its BASE_URL's query.
const echoKey, echoToken = "sk-live-0123456789", "tok-9876543210"

// echoedGateway is a CHAT scope of one source on the upstream at url, with
// echoKey as its key, echoToken in its BASE_URL's query and one attempt per
// call, logging at Debug into the buffer it returns; kv are more keys and
// values of its environment.
func echoedGateway(t *testing.T, url string, kv ...string) (*pgw.GatewayClient, *recorder, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a",
		"CHAT__A__BASE_URL":  url + "/v1?token=" + echoToken,
		"CHAT__A__API_KEY":   echoKey,
		"CHAT__MAX_ATTEMPTS": "1",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	gw, rec := newGateway(t, env, pgw.WithLogger(l))
	return gw, rec, logs
}

// requireNoEchoedCredential checks a failed call of echoedGateway whose
// upstream echoed its credentials: the SDK's body shows the upstream's text
// redacted, and neither credential is in that body, in any attempt's error
// (every attempt failed) or in the logs.
func requireNoEchoedCredential(t *testing.T, body string, rec *recorder, logs *syncBuffer) {
	t.Helper()
	require.Contains(t, body, "redacted", "the upstream's text reaches the SDK, redacted")
	atts := rec.Attempts()
	require.NotEmpty(t, atts)
	for _, c := range []string{echoKey, echoToken} {
		assert.NotContains(t, body, c)
		for _, a := range atts {
			require.Error(t, a.Err)
			assert.NotContains(t, a.Err.Error(), c)
		}
		assert.NotContains(t, logs.String(), c)
	}
}
