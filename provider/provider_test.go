package provider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/provider"
)

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		h      http.Header
		want   time.Duration
		wantOK bool
	}{
		{"absent", http.Header{}, 0, false},
		{"seconds", http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{"fraction", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{"ms first", http.Header{"Retry-After-Ms": {"120"}, "Retry-After": {"9"}}, 120 * time.Millisecond, true},
		{"bad ms falls back", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{"http date", http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second, true},
		{"date past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"huge", http.Header{"Retry-After": {"1e30"}}, provider.MaxRetryAfter, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := provider.RetryAfter(c.h, now)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.wantOK, ok)
		})
	}
}

func TestSetAuthPerProviderReplacesEveryOtherCredential(t *testing.T) {
	for _, c := range []struct {
		p      config.Provider
		header string
		value  string
	}{
		{config.ProviderOpenAI, "Authorization", "Bearer k"},
		{"", "Authorization", "Bearer k"},
		{config.ProviderAzure, "Api-Key", "k"},
		{config.ProviderAnthropic, "X-Api-Key", "k"},
	} {
		h := http.Header{"Authorization": {"Bearer sdk-placeholder"}, "Api-Key": {"x"}, "X-Api-Key": {"y"}}
		provider.SetAuth(h, c.p, "k")
		assert.Equal(t, c.value, h.Get(c.header), "provider %q", c.p)
		for _, other := range []string{"Authorization", "Api-Key", "X-Api-Key"} {
			if other != c.header {
				assert.Empty(t, h.Get(other), "provider %q keeps %s", c.p, other)
			}
		}
	}
	h := http.Header{}
	provider.SetAuth(h, config.ProviderAnthropic, "k")
	assert.Equal(t, provider.AnthropicVersion, h.Get("Anthropic-Version"))
}

func TestParseErrorBodies(t *testing.T) {
	oa := provider.ParseError(config.ProviderOpenAI, 429,
		[]byte(`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`), "")
	assert.True(t, oa.InsufficientQuota())
	assert.Equal(t, "You exceeded your current quota (insufficient_quota)", oa.Text())

	an := provider.ParseError(config.ProviderAnthropic, 529,
		[]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "")
	assert.Equal(t, "overloaded_error", an.Type)
	assert.Equal(t, "Overloaded", an.Message)
	assert.False(t, an.InsufficientQuota())

	num := provider.ParseError(config.ProviderOpenAI, 400, []byte(`{"error":{"message":"bad","code":400}}`), "")
	assert.Equal(t, "400", num.Code)

	html := provider.ParseError(config.ProviderOpenAI, 404, []byte("<html>\n  404 page   not found sk-123</html>"), "sk-123")
	assert.Equal(t, "<html> 404 page not found [redacted]</html>", html.Message)

	empty := provider.ParseError(config.ProviderOpenAI, 503, nil, "")
	assert.Equal(t, "Service Unavailable", empty.Message)
}

func TestErrorJSONParsesBackInEachFormat(t *testing.T) {
	for _, p := range []config.Provider{config.ProviderOpenAI, config.ProviderAzure, config.ProviderAnthropic} {
		b := provider.ErrorJSON(p, "pgw_circuit_open", "PGW-CB-OPEN", "circuit open")
		e := provider.ParseError(p, 424, b, "")
		assert.Equal(t, "circuit open", e.Message, "provider %q", p)
		assert.Equal(t, "pgw_circuit_open", e.Type, "provider %q", p)
		if p != config.ProviderAnthropic {
			assert.Equal(t, "PGW-CB-OPEN", e.Code)
		}
	}
	assert.JSONEq(t, `{"type":"error","error":{"type":"t","message":"m"}}`, string(provider.ErrorJSON(config.ProviderAnthropic, "t", "c", "m")))
}

// The credentials of a source are its key and the values of its BASE_URL's
// query, as written and decoded, longest first — not its api-version, nor
// values too short to be one; ParseSourceError redacts every one of them
// from an upstream's echo.
func TestCredentialsOfASourceAreRedactedFromItsAnswers(t *testing.T) {
	src := config.Source{
		Name:    "a",
		BaseURL: "https://h.example/v1?api-version=2024-10-21&sig=ab%2Fcdef%3D%3D&code=longer-secret-value&x=1",
		APIKey:  config.NewSecret("sk-key-1"),
	}
	assert.Equal(t, []string{"longer-secret-value", "ab%2Fcdef%3D%3D", "ab/cdef==", "sk-key-1"}, provider.Credentials(src))
	body := []byte(`{"error":{"message":"bad request to /v1?api-version=2024-10-21&sig=ab%2Fcdef%3D%3D (sig ab/cdef==, code longer-secret-value, key sk-key-1, x=1)"}}`)
	e := provider.ParseSourceError(config.ProviderOpenAI, src, 400, body)
	assert.Equal(t, "bad request to /v1?api-version=2024-10-21&sig=[redacted] (sig [redacted], code [redacted], key [redacted], x=1)", e.Message)
	assert.Equal(t, `{"error":{"message":"bad request to /v1?api-version=2024-10-21&sig=[redacted] (sig [redacted], code [redacted], key [redacted], x=1)"}}`,
		string(provider.RedactCredentials(body, provider.Credentials(src))))
	assert.Empty(t, provider.Credentials(config.Source{BaseURL: "https://h.example/v1"}))
}

// A query entry without "=" (?0123456789abcdef, a bare token) is a value
// too: an upstream that echoes the URL shows it.
func TestABareQueryTokenIsACredential(t *testing.T) {
	src := config.Source{Name: "a", BaseURL: "https://h.example/v1?tok-0123456789&beta"}
	assert.Equal(t, []string{"tok-0123456789"}, provider.Credentials(src))
	e := provider.ParseSourceError(config.ProviderOpenAI, src, 400, []byte(`{"error":{"message":"no route for /v1?tok-0123456789&beta"}}`))
	assert.Equal(t, "no route for /v1?[redacted]&beta", e.Message)
}

// An upstream that echoes a credential into its error's type or code shows
// it in neither: both are redacted as the message is.
func TestCredentialsAreRedactedFromTheErrorsTypeAndCode(t *testing.T) {
	src := config.Source{Name: "a", BaseURL: "https://h.example/v1?token=tok-0123456789", APIKey: config.NewSecret("sk-key-12345")}
	e := provider.ParseSourceError(config.ProviderOpenAI, src, 400,
		[]byte(`{"error":{"message":"bad","type":"no_route_tok-0123456789","code":"bad_key_sk-key-12345"}}`))
	assert.Equal(t, "no_route_[redacted]", e.Type)
	assert.Equal(t, "bad_key_[redacted]", e.Code)
	assert.Equal(t, "bad (bad_key_[redacted])", e.Text())

	num := provider.ParseError(config.ProviderOpenAI, 400, []byte(`{"error":{"message":"bad","code":1234567}}`), "1234567")
	assert.Equal(t, "[redacted]", num.Code)
}

// An error's type or code stands for the status the same error is sent
// with; OpenAI's code wins over its generic type.
func TestErrorBodyStatus(t *testing.T) {
	for _, c := range []struct {
		typ, code string
		want      int
	}{
		{"invalid_request_error", "invalid_api_key", http.StatusUnauthorized},
		{"", "rate_limit_exceeded", http.StatusTooManyRequests},
		{"invalid_request_error", "", http.StatusBadRequest},
		{"authentication_error", "", http.StatusUnauthorized},
		{"billing_error", "", http.StatusPaymentRequired},
		{"permission_error", "", http.StatusForbidden},
		{"not_found_error", "", http.StatusNotFound},
		{"request_too_large", "", http.StatusRequestEntityTooLarge},
		{"rate_limit_error", "", http.StatusTooManyRequests},
		{"overloaded_error", "", 529},
		{"api_error", "", http.StatusInternalServerError},
		{"server_error", "", http.StatusInternalServerError},
		{"", "", http.StatusInternalServerError},
		{"", "403", http.StatusForbidden}, // Gemini: the code is the status
		{"", "401", http.StatusUnauthorized},
		{"permission_error", "500", http.StatusForbidden}, // a known type first
		{"", "200", http.StatusInternalServerError},       // not an error status
		{"", "1001", http.StatusInternalServerError},
	} {
		assert.Equal(t, c.want, provider.ErrorBody{Type: c.typ, Code: c.code}.Status(), "%s/%s", c.typ, c.code)
	}
}

// The value of an "error" field in a 200 answer reads as an error answer
// does, and one without a message says its code and type — never the
// 200's "OK", never nothing.
func TestParseAnswerError(t *testing.T) {
	src := config.Source{APIKey: config.NewSecret("sk-secret-123")}
	for _, c := range []struct {
		field, text string
		status      int
	}{
		{`{"message":"bad key sk-secret-123","type":"invalid_request_error","code":"invalid_api_key"}`, "bad key [redacted] (invalid_api_key)", 401},
		{`{"code":"invalid_api_key"}`, "invalid_api_key", 401},
		{`{"code":"invalid_api_key","type":"invalid_request_error"}`, "invalid_api_key (invalid_request_error)", 401},
		{`{"type":"permission_error"}`, "permission_error", 403},
		{`{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}`, "Permission denied (403)", 403},
		{`"plain text"`, "plain text", 500},
		{`{}`, "", 500},
		{`42`, "42", 500},
	} {
		eb := provider.ParseAnswerError(src, []byte(c.field))
		assert.Equal(t, c.text, eb.Text(), c.field)
		assert.Equal(t, c.status, eb.Status(), c.field)
	}
	assert.True(t, provider.HasAnswerError([]byte(` {"code":1} `)))
	assert.False(t, provider.HasAnswerError([]byte(` null `)))
	assert.False(t, provider.HasAnswerError(nil))
}

// A spent quota is recognised in text by every code InsufficientQuota
// knows, in any case, and not by a rate limit's words.
func TestNamesSpentQuota(t *testing.T) {
	for _, text := range []string{"x (insufficient_quota)", "BILLING_HARD_LIMIT_REACHED", "billing_not_active", "credit_balance_too_low: add credit"} {
		assert.True(t, provider.NamesSpentQuota(text), text)
	}
	assert.False(t, provider.NamesSpentQuota("Rate limit reached for requests (rate_limit_exceeded)"))
}
