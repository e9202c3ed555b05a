package provider_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/provider"
)

// A credential header's value echoed in text is redacted whatever the key
// (one pgw never knew included), its name and scheme kept; words of a
// message and values already redacted are left alone.
func TestRedactAuthEchoHidesEchoedCredentialHeaders(t *testing.T) {
	cases := []struct{ in, want string }{
		{"headers: Authorization: Bearer sk-abc123456", "headers: Authorization: Bearer [redacted]"},
		{`{"authorization":"Bearer sk-abc123456","x":1}`, `{"authorization":"Bearer [redacted]","x":1}`},
		{`{"message":"saw {\"x-api-key\": \"sk-ant-0123456\"}"}`, `{"message":"saw {\"x-api-key\": \"[redacted]\"}"}`},
		{"X-Goog-Api-Key: AIzaSy0123456789\r\nHost: h", "X-Goog-Api-Key: [redacted]\r\nHost: h"},
		{"api-key=azkey0123456&api-version=2024-10-21", "api-key=[redacted]&api-version=2024-10-21"},
		{"GET /v1?api_key=abcdef0123 HTTP/1.1", "GET /v1?api_key=[redacted] HTTP/1.1"},
		{"Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic [redacted]"},
		{"token Bearer abcdefghijklmnop0123 expired", "token Bearer [redacted] expired"},
		{"Authorization: Bearer [redacted]", "Authorization: Bearer [redacted]"},
		{"invalid bearer token provided", "invalid bearer token provided"},
		{"the x-api-key header is required", "the x-api-key header is required"},
		{`{"code":"invalid_api_key"}`, `{"code":"invalid_api_key"}`},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, provider.RedactAuthEcho(c.in), c.in)
	}
}

// The credentials a request carries are its credential headers' values,
// a scheme's token without the scheme, short values left out.
func TestHeaderCredentialsReadTheCredentialHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer sk-openai-1")
	h.Set("X-Api-Key", "sk-ant-2222")
	h.Set("Api-Key", "azure-3333")
	h.Set("X-Goog-Api-Key", "short")
	h.Set("Content-Type", "application/json")
	assert.ElementsMatch(t, []string{"sk-openai-1", "sk-ant-2222", "azure-3333"}, provider.HeaderCredentials(h))
	assert.Empty(t, provider.HeaderCredentials(nil))
}

// A URL's credentials are its query's values by the rules BASE_URL's are
// read with, and the password of its user info as written and as a URL
// prints it.
func TestURLCredentialsReadTheQueryAndThePassword(t *testing.T) {
	assert.Equal(t, []string{"sig-0123456789", "tok-abcdefgh"},
		provider.URLCredentials("https://h.example/v1/chat/completions?api-version=2024-10-21&sig=sig-0123456789&tok-abcdefgh&x=1"))
	assert.Equal(t, []string{"p@ss/word", "p%40ss%2Fword"}, provider.URLCredentials("https://user:p%40ss%2Fword@h.example/v1"))
	assert.Empty(t, provider.URLCredentials("https://user:pw@h.example/v1"), "a password too short to be one")
	assert.Empty(t, provider.URLCredentials("https://h.example/v1"))
	src := config.Source{BaseURL: "https://user:secret-pw@h.example/v1", APIKey: config.NewSecret("sk-1234")}
	assert.Equal(t, []string{"secret-pw", "sk-1234"}, provider.Credentials(src))
}

// RedactText redacts the known credentials, then the echoed headers'
// values.
func TestRedactTextRedactsKnownAndEchoedCredentials(t *testing.T) {
	got := provider.RedactText(`POST "https://h/v1?k=sk-known-1": 401 {"x-api-key":"px-unknown-2"}`, []string{"sk-known-1"})
	assert.Equal(t, `POST "https://h/v1?k=[redacted]": 401 {"x-api-key":"[redacted]"}`, got)
}

// Go's print of an http.Header lists each value in brackets: the value is
// redacted all the same, and a value redacted already is left alone.
func TestRedactAuthEchoReadsAHeaderAsGoPrintsIt(t *testing.T) {
	assert.Equal(t, "map[Authorization:[Bearer [redacted]] X-Api-Key:[[redacted]]]",
		provider.RedactAuthEcho("map[Authorization:[Bearer px-1234567] X-Api-Key:[px-7654321]]"))
	assert.Equal(t, "X-Api-Key:[[redacted]]", provider.RedactAuthEcho("X-Api-Key:[[redacted]]"))
	assert.Equal(t, "Authorization: [redacted]", provider.RedactAuthEcho("Authorization: [redacted]"))
}

// An error body that echoes credential headers pgw does not know: JSON
// stays valid JSON — a member named as a credential header loses its
// value (a string, a number, an array's strings), a string that shows one
// is redacted as decoded — and text is redacted as RedactAuthEcho does. A
// body that echoes nothing is returned as it is.
func TestRedactAuthEchoBodyKeepsJSONValid(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"error":{"message":"bad","headers":{"Authorization":["Bearer px-1234567"],"X-Api-Key":["px-7654321"]}}}`,
			`{"error":{"message":"bad","headers":{"Authorization":["Bearer [redacted]"],"X-Api-Key":["[redacted]"]}}}`},
		{`{"x-api-key": "px-7654321", "api_key": 123456789, "apikey": null}`,
			`{"x-api-key": "[redacted]", "api_key": "[redacted]", "apikey": null}`},
		{`{"x-api-key":"\u0070x-7654321"}`, `{"x-api-key":"[redacted]"}`},
		{`{"error":{"message":"proxy saw Authorization: Bearer \u0070x-1234567"}}`,
			`{"error":{"message":"proxy saw Authorization: Bearer [redacted]"}}`},
		{`{"error":{"message":"saw {\"x-api-key\": \"px-7654321\"}"}}`, `{"error":{"message":"saw {\"x-api-key\": \"[redacted]\"}"}}`},
		{"<html>Authorization: Bearer px-1234567</html>", "<html>Authorization: Bearer [redacted]</html>"},
		{`{"error":{"message":"the x-api-key header is invalid","code":"invalid_api_key"}}`,
			`{"error":{"message":"the x-api-key header is invalid","code":"invalid_api_key"}}`},
	}
	for _, c := range cases {
		got := provider.RedactAuthEchoBody([]byte(c.in))
		assert.Equal(t, c.want, string(got), c.in)
		if c.in[0] == '{' {
			assert.True(t, json.Valid(got), c.in)
		}
	}
	cut := []byte(`{"error":{"message":"saw x-api-key: px-7654321 and more`)
	assert.Equal(t, `{"error":{"message":"saw x-api-key: [redacted] and more`, string(provider.RedactAuthEchoBody(cut)))
	clean := []byte(`{"error":{"message":"model not found"}}`)
	assert.Same(t, &clean[0], &provider.RedactAuthEchoBody(clean)[0], "a body that echoes nothing is not copied")
}
