package pgw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// twoSources is a CHAT scope with a primary and a backup, both on fakes.
func twoSources(t *testing.T, extra map[string]string) (*pgw.GatewayClient, *recorder, *testutil.Upstream, *testutil.Upstream) {
	t.Helper()
	primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
	env := map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__API_KEY":  "sk-primary",
		"CHAT__PRIMARY__PRIORITY": "0",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__API_KEY":   "sk-backup",
		"CHAT__BACKUP__PRIORITY":  "1",
	}
	for k, v := range extra {
		env[k] = v
	}
	gw, rec := newGateway(t, env)
	return gw, rec, primary, backup
}

func chatBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "sdk-model",
		"messages": []any{map[string]any{"role": "user", "content": "Say hello"}},
		"stream":   stream,
		"stream_options": map[string]any{
			"include_usage": true,
		},
	})
	return string(b)
}

func post(t *testing.T, hc *http.Client, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sdk-placeholder")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

func TestHTTPClientSendsToTheSourceWithItsKeyAndPath(t *testing.T) {
	gw, _, primary, _ := twoSources(t, map[string]string{"CHAT__PRIMARY__MODEL": "gpt-primary"})
	primary.RequireAPIKey("sk-primary")
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.Contains(t, body, testutil.DefaultAnswer)
	last := primary.LastRequest(testutil.Chat)
	assert.Equal(t, "/v1/chat/completions", last.Path)
	assert.Equal(t, "Bearer sk-primary", last.Authorization, "the source's key replaces the SDK's")
	assert.Equal(t, "gpt-primary", last.Model, "the source's MODEL replaces the body's")
	assert.Contains(t, string(last.Body), `"messages"`, "the rest of the body is untouched")
}

func TestHTTPClientKeepsTheSDKModelWithoutASourceModel(t *testing.T) {
	gw, _, primary, _ := twoSources(t, nil)
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false)))
	assert.Equal(t, "sdk-model", primary.LastRequest(testutil.Chat).Model)
}

func TestHTTPClientThrottleWithRetryAfterFailsOverAtOnce(t *testing.T) {
	gw, rec, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: 429, RetryAfter: "30"})
	start := time.Now()
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	assert.Less(t, time.Since(start), 5*time.Second, "no wait for the primary's Retry-After")
	assert.Equal(t, 1, backup.Requests(testutil.Chat))
	adm, err := gw.Admission("CHAT")
	require.NoError(t, err)
	assert.Greater(t, adm.Memo().Remaining("primary", time.Now()), 25*time.Second, "the primary is held off for its Retry-After")
	assert.Equal(t, []string{"primary:throttle", "backup:success"}, rec.Outcomes())
}

func TestHTTPClientUnauthorizedOpensTheBreakerAndFailsOver(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.RequireAPIKey("another-key")
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	snap, err := gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, snap.State)
	assert.Equal(t, 1, backup.Requests(testutil.Chat))
}

func TestHTTPClientBadRequestIsReturnedAsTheUpstreamSentIt(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: 400, Message: "bad temperature", Code: "invalid_value"})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "bad temperature")
	assert.Zero(t, backup.Requests(testutil.Chat), "a bad request is not re-sent to the backup")
}

func TestHTTPClientServerErrorFailsOver(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: 503})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, 1, backup.Requests(testutil.Chat))
}

func TestHTTPClientInsufficientQuotaOpensTheBreaker(t *testing.T) {
	gw, _, primary, _ := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"})
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false)))
	snap, err := gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, snap.State)
}

func TestHTTPClientStreamsWithReadAheadAndHoldsUntilTheEnd(t *testing.T) {
	gw, rec, primary, _ := twoSources(t, nil)
	release := make(chan struct{})
	primary.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"Hel", "lo"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
		if len(lines) == 2 {
			break
		}
	}
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"role":"assistant"`, "the read-ahead preamble comes first")
	assert.Contains(t, lines[1], `"Hel"`)
	assert.Empty(t, rec.Results(), "the call is not over while the stream runs")
	close(release)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Contains(t, string(rest), "data: [DONE]")
	assert.Equal(t, []string{"success"}, rec.Results())
	att := rec.Attempts()
	require.Len(t, att, 1)
	assert.Positive(t, att[0].Usage.TotalTokens, "the usage event settles the quota")
}

func TestHTTPClientStreamCutBeforeContentFailsOver(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Cut: true, CutAfter: 0})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.Contains(t, body, "[DONE]")
	assert.Equal(t, 1, backup.Requests(testutil.Chat))
}

func TestHTTPClientStreamCutMidAnswerIsAFailure(t *testing.T) {
	gw, rec, primary, backup := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Cut: true, CutAfter: 1, Chunks: []string{"a", "b", "c"}})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := io.ReadAll(resp.Body)
	require.Error(t, err, "the SDK sees the cut")
	_ = resp.Body.Close()
	assert.Zero(t, backup.Requests(testutil.Chat), "a cut after content is not retried")
	assert.Equal(t, []string{"primary:failure"}, rec.Outcomes())
	snap, err := gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	assert.Equal(t, 1, snap.ConsecutiveFailures)
}

func TestHTTPClientStreamClosedEarlyIsReleased(t *testing.T) {
	gw, rec, primary, _ := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"a", "b", "c"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done()
		}
	}})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, []string{"primary:abandoned"}, rec.Outcomes())
	snap, err := gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	assert.Zero(t, snap.ConsecutiveFailures)
}

func TestHTTPClientAllOpenAnswersWithAVerdictTheSDKsDoNotRetry(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.RequireAPIKey("x")
	backup.RequireAPIKey("x")
	hc := gw.HTTPClient("CHAT")
	resp := post(t, hc, "chat/completions", chatBody(false))
	assert.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode)
	assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	assert.Equal(t, pgw.CodeCircuitOpen, resp.Header.Get("X-Pgw-Code"))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"), "the certain wait until a probe")
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &body))
	assert.Equal(t, pgw.CodeCircuitOpen, body.Error.Code)
	assert.Equal(t, "pgw_cb_open", body.Error.Type)
	assert.NotContains(t, body.Error.Message, "sk-primary")
	assert.NotContains(t, body.Error.Message, "sk-backup")

	// An SDK error that keeps the response: ErrorFrom reaches the verdict.
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, pgw.ErrorFrom(&fakeSDKError{Response: resp}), &coe)
	assert.Equal(t, "CHAT", coe.Scope)
	var he *pgw.HTTPError
	require.ErrorAs(t, coe, &he, "the last attempt's 401 is behind the verdict")
	assert.Equal(t, 401, he.StatusCode)
}

type fakeSDKError struct {
	StatusCode int
	Response   *http.Response
}

func (e *fakeSDKError) Error() string { return "sdk error" }

func TestHTTPClientAnthropicRequestsGetAnthropicErrorBodies(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.RequireAPIKey("x")
	backup.RequireAPIKey("x")
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(false)))
	require.NoError(t, err)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	var body struct {
		Type  string
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &body))
	assert.Equal(t, "error", body.Type)
	assert.Equal(t, "pgw_cb_open", body.Error.Type)
}

func TestHTTPClientRefusesWhatItCannotGovern(t *testing.T) {
	gw, _, primary, _ := twoSources(t, nil)
	_, err := gw.HTTPClient("CHAT").Post("http://api.example.com/v1/chat/completions", "application/json", strings.NewReader("{}"))
	require.ErrorContains(t, err, "pgw.SDKBaseURL")

	_, err = gw.HTTPClient("NOPE").Post(pgw.SDKBaseURL+"chat/completions", "application/json", strings.NewReader("{}"))
	var use *pgw.UnknownScopeError
	require.ErrorAs(t, err, &use)
	assert.Same(t, use, pgw.ErrorFrom(err))

	_, err = gw.HTTPClient("CHAT").Post(pgw.SDKBaseURL+"chat/completions", "application/json",
		io.LimitReader(endless{}, pgw.MaxSDKRequestBody+1))
	var big *pgw.RequestBodyTooLargeError
	require.ErrorAs(t, err, &big)
	assert.Zero(t, primary.TotalRequests())
}

func TestHTTPClientAfterCloseFailsWithErrClosed(t *testing.T) {
	gw, _, _, _ := twoSources(t, nil)
	require.NoError(t, gw.Close())
	_, err := gw.HTTPClient("CHAT").Post(pgw.SDKBaseURL+"chat/completions", "application/json", strings.NewReader(chatBody(false)))
	require.ErrorIs(t, err, pgw.ErrClosed)
}

func TestHTTPClientCloseEndsAnOpenStream(t *testing.T) {
	gw, rec, primary, _ := twoSources(t, nil)
	primary.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"a", "b"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done()
		}
	}})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, gw.Close(), "Close does not wait for a body nobody reads")
	_, err := io.ReadAll(resp.Body)
	assert.Error(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, []string{"primary:closed"}, rec.Outcomes())
	assert.Equal(t, []string{pgw.ResultClosed}, rec.Results())
}

func TestErrorFromFindsNothingInAPlainError(t *testing.T) {
	assert.Nil(t, pgw.ErrorFrom(errors.New("plain")))
	assert.Nil(t, pgw.ErrorFrom(nil))
}

// endless reads as an endless run of spaces.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], spaces[:])
	}
	return n, nil
}

var spaces = [4096]byte{' '}

func TestHTTPClientQuotaFullUnderFailFastIsAVerdict(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                "CHAT",
		"CHAT__SOURCES":             "only",
		"CHAT__QUOTA_FULL":          "fail_fast",
		"CHAT__ONLY__BASE_URL":      up.URL,
		"CHAT__ONLY__MAX_IN_FLIGHT": "1",
	})
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"a", "b"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done()
		}
	}})
	hc := gw.HTTPClient("CHAT")
	held := post(t, hc, "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, held.StatusCode, "the stream holds the only in-flight slot")
	resp := post(t, hc, "chat/completions", chatBody(false))
	assert.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode)
	assert.Equal(t, pgw.CodeExhausted, resp.Header.Get("X-Pgw-Code"))
	readBody(t, resp)
	require.NoError(t, held.Body.Close())
	again := post(t, hc, "chat/completions", chatBody(false))
	assert.Equal(t, http.StatusOK, again.StatusCode, "closing the stream gave the slot back")
	readBody(t, again)
}

// The SDK's base URL names pgw's host however an SDK spells it: host names
// are compared without regard to case, and HTTP's default port is the
// same host; another port or host is refused, naming it.
func TestHTTPClientTakesSDKBaseURLsHostInAnySpelling(t *testing.T) {
	gw, _, _, _ := twoSources(t, nil)
	hc := gw.HTTPClient("CHAT")
	for _, base := range []string{"http://PGW.invalid/", "http://pgw.INVALID:80/", "https://pgw.invalid/", "https://pgw.invalid:443/"} {
		req, err := http.NewRequest(http.MethodPost, base+"chat/completions", strings.NewReader(chatBody(false)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		require.NoError(t, err, base)
		assert.Equal(t, http.StatusOK, resp.StatusCode, base)
		readBody(t, resp)
	}
	for _, base := range []string{"http://pgw.invalid:8080/", "http://pgw.example/", "http://pgw.invalid:443/"} {
		_, err := hc.Post(base+"chat/completions", "application/json", strings.NewReader(chatBody(false)))
		require.Error(t, err, base)
		assert.Contains(t, err.Error(), "pgw.SDKBaseURL", base)
	}
}
