package pgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// gemini429 is the body of a Gemini 429 on a per-minute quota: the wait is
// in google.rpc.RetryInfo, with no Retry-After header.
const gemini429 = `[{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[
 {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
 {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"57.2s"}]}}]`

// A Gemini 429 holds its source off for the body's retry delay and the call
// fails over at once, through the typed Chat and the governed HTTPClient
// alike.
func TestGemini429BodyHoldsTheSourceOffOnEveryFace(t *testing.T) {
	for _, face := range []string{"chat", "httpclient"} {
		t.Run(face, func(t *testing.T) {
			gem := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, gemini429)
			}))
			t.Cleanup(gem.Close)
			backup := testutil.NewUpstream(t)
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":             "CHAT",
				"CHAT__SOURCES":          "gemini,backup",
				"CHAT__GEMINI__BASE_URL": gem.URL + "/v1beta/openai",
				"CHAT__GEMINI__PRIORITY": "0",
				"CHAT__BACKUP__BASE_URL": backup.URL,
				"CHAT__BACKUP__PRIORITY": "1",
				"CHAT__POLL_INTERVAL_S":  "0.01",
			})
			switch face {
			case "chat":
				_, err := gw.Chat(context.Background(), hello())
				require.NoError(t, err)
			case "httpclient":
				resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
				require.Equal(t, http.StatusOK, resp.StatusCode)
				readBody(t, resp)
			}
			assert.Equal(t, []string{"gemini:throttle", "backup:success"}, rec.Outcomes())
			adm, err := gw.Admission("CHAT")
			require.NoError(t, err)
			assert.InDelta(t, 57.2, adm.Memo().Remaining("gemini", time.Now()).Seconds(), 2,
				"the gemini source is held off for the body's retry delay")
		})
	}
}
