package pgw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// received is what a raw upstream was sent, request by request.
type received struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
}

func (s *received) add(r *http.Request, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	s.bodies = append(s.bodies, body)
}

func (s *received) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// last returns the last request and its body; it fails without one.
func (s *received) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.reqs, "the upstream received nothing")
	return s.reqs[len(s.reqs)-1], s.bodies[len(s.bodies)-1]
}

// rawUpstream is an upstream answering with h, recording every request.
func rawUpstream(t *testing.T, h http.HandlerFunc) (string, *received) {
	t.Helper()
	rec := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(r, string(b))
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, rec
}

func answerJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

// TestHTTPClientSendsAnEscapedPathAsTheSDKWroteIt: SDKs percent-escape
// path parameters (file and batch IDs); the upstream gets them once
// escaped, joined under BASE_URL's path, with both queries.
func TestHTTPClientSendsAnEscapedPathAsTheSDKWroteIt(t *testing.T) {
	url, got := rawUpstream(t, answerJSON)
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a",
		"CHAT__A__BASE_URL": url + "/v1?api-version=2024-10-21"})
	req, err := http.NewRequest(http.MethodGet, pgw.SDKBaseURL+"files/a%20b%2Fc/content?limit=2", nil)
	require.NoError(t, err)
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	readBody(t, resp)
	r, _ := got.last(t)
	assert.Equal(t, "/v1/files/a%20b%2Fc/content", r.URL.EscapedPath())
	assert.Equal(t, "api-version=2024-10-21&limit=2", r.URL.RawQuery)
}

// TestHTTPClientAzureSourceGetsOnlyItsOwnCredential: whatever the SDK set
// (here a Bearer placeholder) is replaced by the source's api-key header,
// and the deployment path and api-version query of BASE_URL are kept.
func TestHTTPClientAzureSourceGetsOnlyItsOwnCredential(t *testing.T) {
	url, got := rawUpstream(t, answerJSON)
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "az",
		"CHAT__AZ__BASE_URL": url + "/openai/deployments/gpt4o?api-version=2024-10-21",
		"CHAT__AZ__PROVIDER": "azure", "CHAT__AZ__API_KEY": "az-key"})
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false)))
	r, _ := got.last(t)
	assert.Equal(t, "/openai/deployments/gpt4o/chat/completions", r.URL.Path)
	assert.Equal(t, "api-version=2024-10-21", r.URL.RawQuery)
	assert.Equal(t, "az-key", r.Header.Get("Api-Key"))
	assert.Empty(t, r.Header.Get("Authorization"), "the SDK's placeholder credential is not sent")
}

// TestHTTPClientRewritesOnlyTheTopLevelModel: a "model" inside another
// object (metadata, a tool's schema) is the SDK's data, not the model.
func TestHTTPClientRewritesOnlyTheTopLevelModel(t *testing.T) {
	url, got := rawUpstream(t, answerJSON)
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a",
		"CHAT__A__BASE_URL": url, "CHAT__A__MODEL": "src-model"})
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions",
		`{"metadata":{"model":"inner"},"messages":[{"role":"user","content":"model"}],"model":"sdk"}`))
	_, body := got.last(t)
	assert.Equal(t, `{"metadata":{"model":"inner"},"messages":[{"role":"user","content":"model"}],"model":"src-model"}`, body)
}

// TestHTTPClientClassifiesEveryDocumentedStatus: through the governed
// client, 403 and 529 fail over (403 opening the breaker), a 429's
// retry-after-ms or HTTP-date Retry-After holds the source off, and 404,
// 413 and 422 go back to the SDK at once as the upstream sent them.
func TestHTTPClientClassifiesEveryDocumentedStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		header   http.Header
		outcome  string
		failover bool
	}{
		{"403", 403, nil, "fatal", true},
		{"529", 529, nil, "failure", true},
		{"429 retry-after-ms", 429, http.Header{"Retry-After-Ms": {"40000"}}, "throttle", true},
		{"429 http-date", 429, http.Header{"Retry-After": {time.Now().Add(45 * time.Second).UTC().Format(http.TimeFormat)}}, "throttle", true},
		{"404", 404, nil, "caller_error", false},
		{"413", 413, nil, "caller_error", false},
		{"422", 422, nil, "caller_error", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, _ := rawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header()[k] = v
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{"error":{"message":"refused here","type":"x","code":"y"}}`)
			})
			good, backup := rawUpstream(t, answerJSON)
			gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a,b",
				"CHAT__A__BASE_URL": bad, "CHAT__B__BASE_URL": good, "CHAT__B__PRIORITY": "1"})
			resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
			body := readBody(t, resp)
			if !tc.failover {
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Contains(t, body, "refused here", "the upstream's own answer")
				assert.Zero(t, backup.count(), "the request's fault is not re-sent")
				assert.Equal(t, []string{"a:" + tc.outcome}, rec.Outcomes())
				return
			}
			assert.Equal(t, http.StatusOK, resp.StatusCode, body)
			assert.Equal(t, []string{"a:" + tc.outcome, "b:success"}, rec.Outcomes())
			_, sent := backup.last(t)
			assert.JSONEq(t, chatBody(false), sent, "the body is re-sent whole to the backup")
			if tc.status == 429 {
				adm, err := gw.Admission("CHAT")
				require.NoError(t, err)
				assert.Greater(t, adm.Memo().Remaining("a", time.Now()), 30*time.Second, "held off for the upstream's wait")
			}
			if tc.status == 403 {
				snap, err := gw.Snapshot(context.Background(), "CHAT", "a")
				require.NoError(t, err)
				assert.Equal(t, pgw.StateOpen, snap.State)
			}
		})
	}
}

// TestHTTPClientConnectionErrorFailsOverWithoutShowingTheQuery: a source
// that refuses connections fails over; the error recorded names its URL
// without BASE_URL's query, which may hold a key.
func TestHTTPClientConnectionErrorFailsOverWithoutShowingTheQuery(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	good, _ := rawUpstream(t, answerJSON)
	var logs syncBuffer
	gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a,b",
		"CHAT__A__BASE_URL": deadURL + "/v1?key=" + marker, "CHAT__B__BASE_URL": good, "CHAT__B__PRIORITY": "1"},
		pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
	att := rec.Attempts()
	require.Error(t, att[0].Err)
	assert.Contains(t, att[0].Err.Error(), "/v1/chat/completions")
	requireNoMarker(t, "attempt records", att)
	require.NotContains(t, logs.String(), marker)
}

// TestHTTPClientCallerCancelEndsAHeldStreamAsReleased: cancelling the
// request's ctx while the SDK reads an event stream ends the body with
// the cancellation, gives the admission back, and says nothing against
// the source.
func TestHTTPClientCallerCancelEndsAHeldStreamAsReleased(t *testing.T) {
	var calls atomic.Int32
	url, _ := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			answerJSON(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a",
		"CHAT__QUOTA_FULL": "fail_fast", "CHAT__A__BASE_URL": url, "CHAT__A__MAX_IN_FLIGHT": "1"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(true)))
	require.NoError(t, err)
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	first := make([]byte, 6)
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	assert.Equal(t, "data: ", string(first))
	cancel()
	_, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, resp.Body.Close())
	snap, err := gw.Snapshot(context.Background(), "CHAT", "a")
	require.NoError(t, err)
	assert.Zero(t, snap.ConsecutiveFailures)
	for _, o := range rec.Outcomes() {
		assert.NotEqual(t, "a:failure", o)
	}
	again := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	assert.Equal(t, http.StatusOK, again.StatusCode, "the in-flight slot is back")
	readBody(t, again)
}

// TestHTTPClientVerdictNamesScopeSourceAndPathOfTheLastAnswer: when pgw
// ends a call through the governed client, the upstream answer behind its
// verdict names the scope, the source and the path sent, never BASE_URL's
// query.
func TestHTTPClientVerdictNamesScopeSourceAndPathOfTheLastAnswer(t *testing.T) {
	bad, _ := rawUpstream(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__MAX_ATTEMPTS": "1",
		"CHAT__A__BASE_URL": bad + "/v1?key=" + marker})
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	body := readBody(t, resp)
	require.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode)
	var he *pgw.HTTPError
	require.ErrorAs(t, pgw.ErrorFrom(&fakeSDKError{Response: resp}), &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	assert.Equal(t, "CHAT", he.Scope)
	assert.Equal(t, "a", he.Source)
	assert.Equal(t, "/v1/chat/completions", he.Path)
	assert.Contains(t, body, "from scope CHAT, source a, path /v1/chat/completions")
	assert.NotContains(t, body, marker)
}

// TestErrorFromReachesTheVerdictThroughAWrappedSDKError: an SDK error
// wrapped again by the caller still leads ErrorFrom to pgw's verdict.
func TestErrorFromReachesTheVerdictThroughAWrappedSDKError(t *testing.T) {
	gw, _, primary, backup := twoSources(t, nil)
	primary.RequireAPIKey("x")
	backup.RequireAPIKey("x")
	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	readBody(t, resp)
	require.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode)
	wrapped := fmt.Errorf("summarise: %w", &fakeSDKError{StatusCode: resp.StatusCode, Response: resp})
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, pgw.ErrorFrom(wrapped), &coe)
	assert.Equal(t, "CHAT", coe.Scope)
	assert.Positive(t, coe.RetryAfter)
}
