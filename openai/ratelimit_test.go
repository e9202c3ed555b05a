package openai_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// TestEveryResponseReachesTheResponseSink: the sink sees the status and the
// rate-limit headers of an answer, successful or not, before its body.
func TestEveryResponseReachesTheResponseSink(t *testing.T) {
	status := http.StatusTooManyRequests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1]}]}`))
	}))
	defer srv.Close()
	c := openai.New()
	src := transport.Source{Name: "s", BaseURL: srv.URL, APIKey: config.NewSecret(testKey), Model: "m"}
	for _, st := range []int{http.StatusTooManyRequests, http.StatusOK} {
		status = st
		var got []int
		ctx := transport.WithResponseSink(testCtx(t), func(s int, h http.Header) {
			got = append(got, s)
			assert.Equal(t, "0", h.Get("x-ratelimit-remaining-requests"))
		})
		_, _ = c.Embed(ctx, src, transport.EmbedRequest{Inputs: []string{"x"}})
		assert.Equal(t, []int{st}, got)
	}
}

// TestGemini429BodyGivesTheRetryAfter: Google's OpenAI-compatible endpoint
// says when to retry in the body, not in a header.
func TestGemini429BodyGivesTheRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"57.2s"}]}}]`))
	}))
	defer srv.Close()
	c := openai.New(openai.WithNow(func() time.Time { return now }))
	_, err := c.Embed(testCtx(t), transport.Source{Name: "g", BaseURL: srv.URL, Model: "m"}, transport.EmbedRequest{Inputs: []string{"x"}})
	var he *errs.HTTPError
	require.True(t, errors.As(err, &he), "%v", err)
	assert.Equal(t, 57200*time.Millisecond, he.RetryAfter)
}
