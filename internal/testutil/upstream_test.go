package testutil_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestUpstreamQueueThenScriptThenSuccess(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.SetScript(testutil.Chat, func(n int) testutil.Reply {
		if n == 3 {
			return testutil.Reply{Status: http.StatusServiceUnavailable}
		}
		return testutil.Reply{}
	})
	u.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "2"}, testutil.Reply{Status: http.StatusUnauthorized})
	ctx := context.Background()

	var got []int
	for range 4 {
		got = append(got, post(t, ctx, u.URL+"/chat/completions", chatBody).StatusCode)
	}
	assert.Equal(t, []int{429, 401, 503, 200}, got)
	assert.Equal(t, 4, u.Requests(testutil.Chat))
	assert.Equal(t, 4, u.TotalRequests())
	assert.Equal(t, "Bearer k", u.LastAuthorization())
	assert.Equal(t, "m", u.LastRequest(testutil.Chat).Model)
}

func TestUpstreamErrorReplyIsAnOpenAIErrorObject(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Embeddings, testutil.Reply{Status: 429, RetryAfter: "3", Message: "slow down", Code: "insufficient_quota"})
	resp := post(t, context.Background(), u.URL+"/embeddings", `{"input":["a"]}`)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "slow down", body.Error.Message)
	assert.Equal(t, "insufficient_quota", body.Error.Code)
	assert.Equal(t, "insufficient_quota", body.Error.Type)
}

func TestUpstreamRejectsWhatOpenAIRejects(t *testing.T) {
	u := testutil.NewUpstream(t)
	ctx := context.Background()
	assert.Equal(t, 404, post(t, ctx, u.URL+"/completions", chatBody).StatusCode)
	assert.Equal(t, 400, post(t, ctx, u.URL+"/chat/completions", `{"messages":[]}`).StatusCode)
	assert.Equal(t, 400, post(t, ctx, u.URL+"/embeddings", `{"input":[]}`).StatusCode)
	ocr := `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`
	assert.Equal(t, 400, post(t, ctx, u.URL+"/chat/completions", ocr).StatusCode, "OCR images must be data URLs")
	assert.Equal(t, 1, u.Requests(testutil.OCR))
	resp, err := http.Get(u.URL + "/embeddings")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestUpstreamStopReleasesADelayedStream(t *testing.T) {
	u, stop := testutil.StartUpstream()
	u.Enqueue(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(t, ctx, u.URL+"/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"role":"assistant"`, "the role chunk comes before the delay")

	stopped := make(chan struct{})
	go func() { stop(); stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("stop did not return while a stream was delayed")
	}
}
