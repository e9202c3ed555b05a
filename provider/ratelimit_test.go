package provider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/provider"
)

var now = time.Date(2025, 8, 21, 12, 40, 0, 0, time.UTC)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// The sample of OpenAI's rate-limit guide.
func TestParseOpenAIDocumentedSample(t *testing.T) {
	h := header(
		"x-ratelimit-limit-requests", "60",
		"x-ratelimit-limit-tokens", "150000",
		"x-ratelimit-remaining-requests", "59",
		"x-ratelimit-remaining-tokens", "149984",
		"x-ratelimit-reset-requests", "1s",
		"x-ratelimit-reset-tokens", "6m0s",
	)
	r := provider.ParseRateLimits(provider.DialectOpenAI, h, now)
	assert.Equal(t, provider.Window{Limit: 60, Remaining: 59, Reset: time.Second}, r.Requests)
	assert.Equal(t, provider.Window{Limit: 150000, Remaining: 149984, Reset: 6 * time.Minute}, r.Tokens)
	assert.False(t, r.HasRetryAfter)
	assert.Empty(t, r.Malformed)
	assert.Empty(t, r.Clamped)
}

// Sub-second resets as OpenAI sends them on a lightly used key.
func TestParseOpenAIMillisecondResets(t *testing.T) {
	h := header(
		"x-ratelimit-limit-requests", "5000", "x-ratelimit-remaining-requests", "4999",
		"x-ratelimit-reset-requests", "12ms",
		"x-ratelimit-limit-tokens", "160000", "x-ratelimit-remaining-tokens", "159976",
		"x-ratelimit-reset-tokens", "120ms",
	)
	r := provider.ParseRateLimits(provider.DialectOpenAI, h, now)
	assert.Equal(t, int64(4999), r.Requests.Remaining)
	assert.Equal(t, 12*time.Millisecond, r.Requests.Reset)
	assert.Equal(t, 120*time.Millisecond, r.Tokens.Reset)
}

// Azure sends the OpenAI names and retry-after-ms on a 429.
func TestParseAzure429(t *testing.T) {
	h := header(
		"x-ratelimit-remaining-requests", "0",
		"x-ratelimit-remaining-tokens", "0",
		"x-ratelimit-limit-requests", "60",
		"x-ratelimit-limit-tokens", "10000",
		"retry-after-ms", "8500",
		"retry-after", "9",
	)
	r := provider.ParseRateLimits(provider.DialectAzure, h, now)
	assert.Equal(t, int64(0), r.Requests.Remaining)
	assert.Equal(t, provider.MinReset, r.Requests.Reset, "no reset header: the figures hold for MinReset")
	assert.True(t, r.HasRetryAfter)
	assert.Equal(t, 8500*time.Millisecond, r.RetryAfter, "retry-after-ms is read before Retry-After")
}

// A recorded answer of Anthropic's Messages API.
func TestParseAnthropicRecordedHeaders(t *testing.T) {
	h := header(
		"anthropic-ratelimit-input-tokens-limit", "80000",
		"anthropic-ratelimit-input-tokens-remaining", "80000",
		"anthropic-ratelimit-input-tokens-reset", "2025-08-21T12:40:59Z",
		"anthropic-ratelimit-output-tokens-limit", "16000",
		"anthropic-ratelimit-output-tokens-remaining", "15000",
		"anthropic-ratelimit-output-tokens-reset", "2025-08-21T12:41:00Z",
		"anthropic-ratelimit-requests-limit", "1000",
		"anthropic-ratelimit-requests-remaining", "999",
		"anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z",
		"anthropic-ratelimit-tokens-limit", "96000",
		"anthropic-ratelimit-tokens-remaining", "96000",
		"anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59Z",
	)
	r := provider.ParseRateLimits(provider.DialectAnthropic, h, now)
	assert.Equal(t, provider.Window{Limit: 1000, Remaining: 999, Reset: 59 * time.Second}, r.Requests)
	assert.Equal(t, provider.Window{Limit: 96000, Remaining: 96000, Reset: 59 * time.Second}, r.Tokens,
		"the tokens window, which counts input and output together as a call's estimate does")
	assert.Empty(t, r.Malformed)

	// Without the combined window, the tighter of input and output tokens
	// stands in.
	h.Del("anthropic-ratelimit-tokens-limit")
	h.Del("anthropic-ratelimit-tokens-remaining")
	h.Del("anthropic-ratelimit-tokens-reset")
	r = provider.ParseRateLimits(provider.DialectAnthropic, h, now)
	assert.Equal(t, provider.Window{Limit: 16000, Remaining: 15000, Reset: time.Minute}, r.Tokens, "output tokens")
}

// Groq's documented sample: OpenAI names, requests per day.
func TestParseGroqDocumentedSample(t *testing.T) {
	h := header(
		"retry-after", "2",
		"x-ratelimit-limit-requests", "14400",
		"x-ratelimit-limit-tokens", "18000",
		"x-ratelimit-remaining-requests", "14370",
		"x-ratelimit-remaining-tokens", "17997",
		"x-ratelimit-reset-requests", "2m59.56s",
		"x-ratelimit-reset-tokens", "7.66s",
	)
	d := provider.DialectOf(config.ProviderOpenAI, "https://api.groq.com/openai/v1")
	require.Equal(t, provider.DialectGroq, d)
	r := provider.ParseRateLimits(d, h, now)
	assert.Equal(t, provider.Window{Limit: 14400, Remaining: 14370, Reset: 2*time.Minute + 59560*time.Millisecond, PerDay: true}, r.Requests)
	assert.Equal(t, provider.Window{Limit: 18000, Remaining: 17997, Reset: 7660 * time.Millisecond}, r.Tokens)
	assert.Equal(t, 2*time.Second, r.RetryAfter)
}

func TestDialectOf(t *testing.T) {
	for _, c := range []struct {
		p    config.Provider
		url  string
		want provider.Dialect
	}{
		{config.ProviderOpenAI, "https://api.openai.com/v1", provider.DialectOpenAI},
		{"", "http://127.0.0.1:8080/v1", provider.DialectOpenAI},
		{config.ProviderAzure, "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21", provider.DialectAzure},
		{config.ProviderAnthropic, "https://api.anthropic.com/v1", provider.DialectAnthropic},
		{config.ProviderOpenAI, "https://api.groq.com/openai/v1", provider.DialectGroq},
		{config.ProviderOpenAI, "https://generativelanguage.googleapis.com/v1beta/openai", provider.DialectGemini},
		{config.ProviderOpenAI, "::not a url", provider.DialectOpenAI},
	} {
		assert.Equal(t, c.want, provider.DialectOf(c.p, c.url), c.url)
	}
}

// Real-world noise: comma numbers, -1 sentinels, past resets, junk, resets
// far ahead, missing headers. Nothing fails; junk is reported, never used.
func TestParseRateLimitsNoise(t *testing.T) {
	t.Run("comma numbers and integral decimals", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-limit-tokens", "2,000,000", "x-ratelimit-remaining-tokens", "1,999,000.0",
			"x-ratelimit-reset-tokens", "30s"), now)
		assert.Equal(t, int64(2_000_000), r.Tokens.Limit)
		assert.Equal(t, int64(1_999_000), r.Tokens.Remaining)
		assert.Empty(t, r.Malformed)
	})
	t.Run("-1 sentinel means no figure", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-limit-requests", "-1", "x-ratelimit-remaining-requests", "-1", "x-ratelimit-reset-requests", "1s"), now)
		assert.False(t, r.Requests.Known())
		assert.Empty(t, r.Malformed, "a sentinel is not malformed")
		assert.False(t, r.Any())
	})
	t.Run("past reset (clock skew) holds MinReset", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectAnthropic, header(
			"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", "2025-08-21T12:39:00Z"), now)
		assert.Equal(t, provider.Window{Limit: 50, Remaining: 0, Reset: provider.MinReset}, r.Requests)
		assert.Empty(t, r.Malformed)
	})
	t.Run("a reset ten hours ahead is clamped and reported", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "10h"), now)
		assert.Equal(t, provider.MaxReset, r.Requests.Reset)
		assert.Equal(t, []string{"x-ratelimit-reset-requests"}, r.Clamped)
	})
	t.Run("junk is ignored and named", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-limit-requests", "lots", "x-ratelimit-remaining-requests", "12.5",
			"x-ratelimit-remaining-tokens", "-7", "x-ratelimit-reset-tokens", "soon",
			"retry-after", "tomorrow-ish"), now)
		assert.False(t, r.Requests.Known())
		assert.False(t, r.Tokens.Known())
		assert.False(t, r.HasRetryAfter)
		assert.ElementsMatch(t, []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
			"x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", "retry-after"}, r.Malformed)
	})
	t.Run("no headers at all", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectAnthropic, http.Header{}, now)
		assert.False(t, r.Any())
		assert.Empty(t, r.Malformed)
	})
	t.Run("plain seconds and RFC 3339 resets in the OpenAI headers", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "20",
			"x-ratelimit-remaining-tokens", "3", "x-ratelimit-reset-tokens", "2025-08-21T12:40:30Z"), now)
		assert.Equal(t, 20*time.Second, r.Requests.Reset)
		assert.Equal(t, 30*time.Second, r.Tokens.Reset)
		assert.Equal(t, int64(-1), r.Requests.Limit)
	})
}

// The 429 body of Gemini's per-minute quota (RetryInfo, QuotaFailure).
func TestParseGeminiPerMinute429(t *testing.T) {
	body := []byte(`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
	 {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.0-flash"},"quotaValue":"15"}]},
	 {"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
	 {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"57.2s"}]}}`)
	g, ok := provider.ParseGeminiError(body, now)
	require.True(t, ok)
	assert.Equal(t, 57200*time.Millisecond, g.Delay)
	assert.False(t, g.PerDay)
	assert.Equal(t, "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", g.QuotaID)
}

// A per-day quota holds the source off until the quota resets (midnight
// Pacific), not for the short retry delay.
func TestParseGeminiPerDay429HoldsUntilTheReset(t *testing.T) {
	body := []byte(`[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[
	 {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]},
	 {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9s"}]}}]`)
	g, ok := provider.ParseGeminiError(body, now) // 12:40 UTC = 05:40 PDT
	require.True(t, ok)
	assert.True(t, g.PerDay)
	assert.Equal(t, 18*time.Hour+20*time.Minute, g.Delay, "until 00:00 PDT = 07:00 UTC the next day")
}

func TestParseGeminiErrorIgnoresOtherBodies(t *testing.T) {
	for _, b := range []string{``, `not json`, `{"error":{"message":"x"}}`, `[]`,
		`{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`} {
		_, ok := provider.ParseGeminiError([]byte(b), now)
		assert.False(t, ok, b)
	}
}

// An error answer's wait: the Retry-After headers, and a Gemini 429 body's
// delay when later; the body of another status says nothing.
func TestErrorRetryAfterReadsHeadersAndGeminiBodies(t *testing.T) {
	body := []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[
	 {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"57.2s"}]}}`)
	ra, ok := provider.ErrorRetryAfter(429, http.Header{}, body, now)
	assert.True(t, ok)
	assert.Equal(t, 57200*time.Millisecond, ra)
	ra, ok = provider.ErrorRetryAfter(429, header("Retry-After", "90"), body, now)
	assert.True(t, ok)
	assert.Equal(t, 90*time.Second, ra, "the later of the two")
	_, ok = provider.ErrorRetryAfter(503, http.Header{}, body, now)
	assert.False(t, ok, "only a 429's body is read")
	ra, ok = provider.ErrorRetryAfter(429, header("Retry-After", "3"), []byte(`{"error":{"message":"slow down"}}`), now)
	assert.True(t, ok)
	assert.Equal(t, 3*time.Second, ra)
	_, ok = provider.ErrorRetryAfter(429, http.Header{}, nil, now)
	assert.False(t, ok)
}
