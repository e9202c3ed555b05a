package pgw_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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

// A JSON answer is read whole inside its attempt: one whose body is cut
// short of its Content-Length is the source's failure and fails over, and
// the SDK gets the backup's whole answer, never the cut one.
func TestHTTPClientCutJSONAnswerFailsOver(t *testing.T) {
	cut, _ := rawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "500")
		fmt.Fprint(w, `{"id":"x","choices":[`)
	})
	good, _ := rawUpstream(t, answerJSON)
	gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a,b",
		"CHAT__A__BASE_URL": cut + "/v1", "CHAT__A__PRIORITY": "0", "CHAT__B__BASE_URL": good + "/v1", "CHAT__B__PRIORITY": "1"})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"hi"`)
	att := rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, "a", att[0].Source)
	assert.Equal(t, pgw.OutcomeFailure, att[0].Outcome)
	assert.Equal(t, "b", att[1].Source)
	assert.Equal(t, []string{"success"}, rec.Results())
}

// A hold-off that outlasts the stall budget ends the call at once, with no
// deadline on the request: the SDK gets the verdict — 424, not to be
// retried, Retry-After the source's own wait — and ErrorFrom the
// *AllSourcesExhausted behind it, without a second request to the source.
func TestHTTPClientHoldOffPastTheStallBudgetIsAVerdictAtOnce(t *testing.T) {
	u, rcv := rawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
	})
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a",
		"CHAT__STALL_WINDOW_S": "5", "CHAT__A__BASE_URL": u + "/v1"})
	done := make(chan *http.Response, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(false)))
		if err != nil {
			done <- nil
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := gw.HTTPClient("CHAT").Do(req)
		if err != nil {
			resp = nil
		}
		done <- resp
	}()
	var resp *http.Response
	select {
	case resp = <-done:
	case <-time.After(time.Minute): // a watchdog: waiting out the 120 s hold-off is the fault
		t.Fatal("the call waited for a hold-off longer than its stall budget")
	}
	require.NotNil(t, resp)
	body := readBody(t, resp)
	require.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode, body)
	assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	assert.Equal(t, pgw.CodeExhausted, resp.Header.Get("X-Pgw-Code"))
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.InDelta(t, 120, ra, 5, "the source's own wait")
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, pgw.ErrorFrom(&fakeSDKError{StatusCode: resp.StatusCode, Response: resp}), &ase)
	assert.Greater(t, ase.RetryAfter, 100*time.Second)
	var he *pgw.HTTPError
	require.ErrorAs(t, ase, &he)
	assert.Equal(t, http.StatusTooManyRequests, he.StatusCode)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	assert.Len(t, rcv.reqs, 1, "the held-off source is not asked again")
}
