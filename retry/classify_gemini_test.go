package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// geminiRaw is a Gemini 429 body on a per-minute quota, as an SDK error
// carries it.
const geminiRaw = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
 {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
 {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"57.2s"}]}}`

// Gemini words its rate limits "You exceeded your current quota" and says
// when to come back: a throttle, not a spent quota. The same words with no
// time to wait, or with the insufficient_quota code, stay fatal.
func TestQuotaWordsWithATimeToWaitAreAThrottle(t *testing.T) {
	msg := "You exceeded your current quota, please check your plan and billing details."
	assert.Equal(t, retry.Throttle, retry.Classify(httpErr(429, 57*time.Second, msg)))
	assert.Equal(t, retry.Fatal, retry.Classify(httpErr(429, 0, msg)))
	assert.Equal(t, retry.Fatal, retry.Classify(httpErr(429, 5*time.Second, msg+" (insufficient_quota)")))
	assert.Equal(t, retry.Throttle, retry.Classify(newSDKError(429, nil, geminiRaw)), "an SDK's error with Gemini's body")
}

// An SDK's error with Gemini's 429 body holds the source off for the body's
// retry delay, and the call fails over at once.
func TestSDKGemini429HoldsTheSourceOffForTheBodysDelay(t *testing.T) {
	e := newEnv(t)
	var calls []string
	v, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		calls = append(calls, src.Name)
		if src.Name == "s1" {
			return "", transport.Usage{}, newSDKError(429, nil, geminiRaw)
		}
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"s1", "s2"}, calls)
	assert.Empty(t, e.sleeper.taken(), "a hold-off, not a backoff")
	assert.Equal(t, 57200*time.Millisecond, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()))
	assert.Zero(t, e.snapshot(t, "s1").ConsecutiveFailures, "a throttle is no breaker failure")
	e.requireNothingHeld(t)
}
