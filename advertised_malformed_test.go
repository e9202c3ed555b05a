package pgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// junkLimitsUpstream answers embeddings with rate-limit headers of
// nonsense, and counts its calls.
func junkLimitsUpstream(t *testing.T, calls *atomic.Int64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("x-ratelimit-limit-requests", "lots")
		w.Header().Set("x-ratelimit-remaining-requests", "-7")
		w.Header().Set("x-ratelimit-reset-requests", "soon")
		w.Header().Set("x-ratelimit-remaining-tokens", "12.5")
		w.Header().Set("Retry-After", "tomorrow-ish")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// Malformed rate-limit headers never fail a call nor hold the source back:
// every call goes through, the values are counted as ignored, and nothing
// is advertised for the source.
func TestMalformedRateLimitHeadersNeverFailACall(t *testing.T) {
	var calls atomic.Int64
	gw, _ := newGateway(t, map[string]string{
		"EMBEDDING__SOURCES":      "up",
		"EMBEDDING__UP__BASE_URL": junkLimitsUpstream(t, &calls),
		"EMBEDDING__UP__MODEL":    "m",
		"EMBEDDING__QUOTA_FULL":   "fail_fast",
		"EMBEDDING__CIRCUIT_OPEN": "fail_fast",
	})
	ctx := context.Background()
	for i := range 5 {
		_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
		require.NoError(t, err, "call %d", i+1)
	}
	assert.Equal(t, int64(5), calls.Load())
	adm, err := gw.Admission("EMBEDDING")
	require.NoError(t, err)
	assert.Equal(t, uint64(5*5), adm.MalformedHeaders(), "five unreadable values per answer, each counted")
	snap, err := gw.Snapshot(ctx, "EMBEDDING", "up")
	require.NoError(t, err)
	assert.Nil(t, snap.Advertised, "nothing readable was advertised")
}
