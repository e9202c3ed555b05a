package pgw_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// anthropicErrorEvent is an Anthropic stream whose first event is an error
// of typ.
func anthropicErrorEvent(typ string) wireReply {
	return sseReply("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"refused\"}}\n\n")
}

// An error event that opens a stream through the governed http client is
// classified as the same error sent as its status: a bad key or a missing
// permission is fatal (the breaker open at once, the call failed over, as a
// 401 or 403 is), a request the upstream refused is the caller's error
// (returned at once, nothing recorded against the source, as a 400 or 404
// is).
func TestHTTPClientAuthAndRequestErrorEventsAreClassifiedAsTheirStatus(t *testing.T) {
	fatal := map[string]wireReply{
		"401 reference":              jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`),
		"authentication_error":       anthropicErrorEvent("authentication_error"),
		"permission_error":           anthropicErrorEvent("permission_error"),
		"openai invalid_api_key":     sseReply("data: {\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}\n\n"),
		"openai invalid_api_key 2xx": jsonReply(200, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
	}
	for name, reply := range fatal {
		t.Run(name, func(t *testing.T) {
			ws := newWireServer(t, reply)
			gw, rec := quotaScope(t, "anthropic", ws)
			resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, readBody(t, resp), "Hello", "the backup's answer")
			assert.Equal(t, []string{"primary:fatal", "backup:success"}, rec.Outcomes())
			snap, err := gw.Snapshot(t.Context(), "CHAT", "primary")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateOpen, snap.State, "opened at once, as by a 401")
		})
	}
	caller := map[string]struct {
		reply  wireReply
		status int
	}{
		"not_found_error":       {anthropicErrorEvent("not_found_error"), http.StatusNotFound},
		"invalid_request_error": {anthropicErrorEvent("invalid_request_error"), http.StatusBadRequest},
	}
	for name, c := range caller {
		t.Run(name, func(t *testing.T) {
			ws := newWireServer(t, c.reply)
			gw, rec := quotaScope(t, "anthropic", ws)
			req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(true)))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := gw.HTTPClient("CHAT").Do(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			require.Error(t, err, "returned at once, not failed over to the backup")
			var he *pgw.HTTPError
			require.True(t, errors.As(err, &he), "%v", err)
			assert.Equal(t, c.status, he.StatusCode)
			assert.Contains(t, he.Message, name)
			assert.Equal(t, []string{"primary:caller_error"}, rec.Outcomes())
			snap, err := gw.Snapshot(t.Context(), "CHAT", "primary")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateClosed, snap.State)
		})
	}
}
