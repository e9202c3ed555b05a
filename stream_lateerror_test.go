package pgw_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
)

// The streams whose upstream sends an error event after its first content:
// an OpenAI-compatible one (a server_error, which stands for a 500) and an
// Anthropic one (an overloaded_error, a 529).
var (
	lateOpenAIError    = "data: " + chunkHello + "\n\n" + `data: {"error":{"message":"The server had an error","type":"server_error"}}` + "\n\n"
	lateAnthropicError = rawAntStart + rawAntText + rawAntOverloaded
)

// lateErrorScope is a CHAT scope whose primary (of provider) streams body
// and whose backup, a healthy OpenAI-compatible fake, would answer.
func lateErrorScope(t *testing.T, provider, body string) (*pgw.GatewayClient, *recorder, *rawSSE, *testutil.Upstream) {
	t.Helper()
	primary := newRawSSE(t, func(int) string { return body }, nil)
	backup := testutil.NewUpstream(t)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__PROVIDER": provider,
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__MODEL":    "m",
		"CHAT__PRIMARY__PRIORITY": "0",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__PRIORITY":  "1",
	})
	return gw, rec, primary, backup
}

// requireLateFailure checks what an error event after the first content
// leaves: one attempt, on the primary, recorded as a failure; the call's
// result an error; the backup never asked, since the caller already had
// part of the answer.
func requireLateFailure(t *testing.T, rec *recorder, primary *rawSSE, backup *testutil.Upstream) {
	t.Helper()
	assert.Equal(t, 1, primary.requests(), "no retry after the first chunk")
	assert.Zero(t, backup.Requests(testutil.Chat), "no fail-over after the first chunk")
	assert.Equal(t, []string{"primary:failure"}, rec.Outcomes())
	assert.Equal(t, []string{pgw.ResultError}, rec.Results())
}

// requireEventError checks that err is the error event's, as the transport
// of provider documents it: the OpenAI transport's *openai.UpstreamError,
// the Anthropic transport's *pgw.HTTPError of the status the event's type
// stands for.
func requireEventError(t *testing.T, err error, provider string, status int) {
	t.Helper()
	if provider == "openai" {
		var ue *openai.UpstreamError
		require.ErrorAs(t, err, &ue)
		assert.Contains(t, ue.Message, "The server had an error")
		return
	}
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, status, he.StatusCode)
}

// ChatStream, on pgw's own transports: the caller gets the first chunk, then
// the error the event reports from Recv (and from every later Recv).
func TestChatStreamErrorEventAfterTheFirstChunkIsReturnedAndRecorded(t *testing.T) {
	for name, c := range map[string]struct {
		provider, body string
		status         int
	}{
		"openai":    {"openai", lateOpenAIError, 0}, // an *openai.UpstreamError, not a *pgw.HTTPError
		"anthropic": {"anthropic", lateAnthropicError, 529},
	} {
		t.Run(name, func(t *testing.T) {
			gw, rec, primary, backup := lateErrorScope(t, c.provider, c.body)
			st, err := gw.ChatStream(context.Background(), hello())
			require.NoError(t, err)
			text, err := drain(st)
			assert.Equal(t, "Hello", text)
			require.Error(t, err)
			require.NotErrorIs(t, err, io.EOF)
			requireEventError(t, err, c.provider, c.status)
			_, again := st.Recv()
			assert.Equal(t, err, again)
			require.NoError(t, st.Close())
			requireLateFailure(t, rec, primary, backup)
			requireEventError(t, rec.Attempts()[0].Err, c.provider, c.status)
		})
	}
}

// The governed http client: the SDK reads the first content and then the
// error event itself, to the body's end, and turns it into its own error;
// the attempt is recorded as the failure the event stands for.
func TestHTTPClientErrorEventAfterTheFirstChunkReachesTheSDKAndIsRecorded(t *testing.T) {
	for name, c := range map[string]struct {
		provider, body, path, event string
		status                      int
	}{
		"openai":    {"openai", lateOpenAIError, "chat/completions", `"type":"server_error"`, http.StatusInternalServerError},
		"anthropic": {"anthropic", lateAnthropicError, "v1/messages", `"type":"overloaded_error"`, 529},
	} {
		t.Run(name, func(t *testing.T) {
			gw, rec, primary, backup := lateErrorScope(t, c.provider, c.body)
			resp := post(t, gw.HTTPClient("CHAT"), c.path, chatBody(true))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			body := readBody(t, resp)
			assert.Contains(t, body, "Hello")
			assert.Contains(t, body, c.event, "the error event reaches the SDK, after the content")
			requireLateFailure(t, rec, primary, backup)
			var he *pgw.HTTPError
			require.ErrorAs(t, rec.Attempts()[0].Err, &he)
			assert.Equal(t, c.status, he.StatusCode)
		})
	}
}
