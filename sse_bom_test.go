package pgw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// bomStream is an OpenAI-style event stream whose body opens with a UTF-8
// byte order mark; its first event carries the first words and the usage.
func bomStream(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "\xEF\xBB\xBF"+
		`data: {"choices":[{"index":0,"delta":{"content":"Hello"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`+"\n\n"+
		`data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}`+"\n\n"+
		"data: [DONE]\n\n")
}

// A stream that opens with a byte order mark reads as if it were absent:
// its first event is the answer's first chunk.
func TestChatStreamIgnoresALeadingByteOrderMark(t *testing.T) {
	url, _ := rawUpstream(t, bomStream)
	gw, rec := newGateway(t, map[string]string{"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": url})
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	defer st.Close()
	var text strings.Builder
	for {
		ch, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		text.WriteString(ch.Delta)
	}
	assert.Equal(t, "Hello there", text.String())
	assert.Equal(t, 5, st.Usage().TotalTokens)
	assert.Equal(t, []string{pgw.ResultSuccess}, rec.Results())
}

// Through the governed SDK client the bytes reach the SDK unchanged, and
// the first event still counts as the answer's first content and usage.
func TestHTTPClientReadsAStreamThatOpensWithAByteOrderMark(t *testing.T) {
	url, _ := rawUpstream(t, bomStream)
	gw, rec := newGateway(t, map[string]string{"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": url})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.True(t, strings.HasPrefix(string(body), "\xEF\xBB\xBFdata: "), "the body reaches the SDK as sent")
	require.Len(t, rec.Attempts(), 1)
	assert.Equal(t, pgw.OutcomeSuccess, rec.Attempts()[0].Outcome)
	assert.Equal(t, 5, rec.Attempts()[0].Usage.TotalTokens, "the first event's usage settles the quota")
}
