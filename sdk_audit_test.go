package pgw_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A bad request found on the backup, after the primary failed, is still the
// request's fault: the SDK gets the upstream's own 400, not a verdict that
// would hide it behind a 424.
func TestHTTPClientBadRequestAfterAFailOverIsTheUpstreamsAnswer(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: 503})
	backup.Enqueue(testutil.Chat, testutil.Reply{Status: 400, Message: "bad temperature", Code: "invalid_value"})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	body := readBody(t, resp)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, "bad temperature")
	assert.Nil(t, pgw.ErrorFrom(&fakeSDKError{StatusCode: resp.StatusCode, Response: resp}), "the upstream's answer, not a pgw verdict")
	assert.Equal(t, 1, primary.Requests(testutil.Chat))
	assert.Equal(t, 1, backup.Requests(testutil.Chat))
}

// The SDK reads the upstream's event stream byte for byte as it was sent —
// the read-ahead first, then the rest — whatever its line endings, comments,
// id and retry fields, a data field without its space or a last event
// without its blank line: the SDK's own parser sees what the upstream wrote.
func TestHTTPClientStreamReachesTheSDKByteForByte(t *testing.T) {
	const hi = `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`
	for name, stream := range map[string]string{
		"CRLF, comment and id":       ": keep-alive\r\n\r\nid: 1\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\ndata: " + hi + "\r\n\r\ndata: [DONE]\r\n\r\n",
		"retry field and multi-line": "retry: 100\n: c\n\ndata: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
		"data without its space":     "data:" + hi + "\n\ndata:[DONE]\n\n",
		"last event without blank":   "data: " + hi + "\n\ndata: [DONE]\n",
	} {
		t.Run(name, func(t *testing.T) {
			u, _ := rawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, stream)
			})
			gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": u + "/v1"})
			resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, stream, readBody(t, resp))
			assert.Equal(t, []string{"success"}, rec.Results())
		})
	}
}
