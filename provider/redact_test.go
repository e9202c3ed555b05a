package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/provider"
)

// A body that is JSON stays JSON when a credential is redacted from it: in
// strings (escaped forms too) and keys, and a number that shows one becomes
// a string; JSON cut short is read alike; text that is not JSON is
// redacted byte by byte.
func TestRedactingAJSONBodyKeepsItJSON(t *testing.T) {
	creds := []string{"sk-key-0123", "12345678"}
	cases := []struct{ name, in, want string }{
		{"number", `{"account":12345678}`, `{"account":"[redacted]"}`},
		{"number showing one", `{"n":-1234567890.5e3}`, `{"n":"-[redacted]90.5e3"}`},
		{"number in a list", `[1, 12345678 ,2]`, `[1, "[redacted]" ,2]`},
		{"string", `{"message":"key sk-key-0123 of 12345678"}`, `{"message":"key [redacted] of [redacted]"}`},
		{"escaped string", `{"message":"key \u0073k-key-0123 \"quoted\" <b>"}`, `{"message":"key [redacted] \"quoted\" <b>"}`},
		{"key", `{"12345678":true}`, `{"[redacted]":true}`},
		{"layout kept", "{\n  \"a\": [ 12345678, null, false ],\n  \"b\": 7\n}", "{\n  \"a\": [ \"[redacted]\", null, false ],\n  \"b\": 7\n}"},
		{"nothing to redact", `{"a":"b\n","n":1234567}`, `{"a":"b\n","n":1234567}`},
		{"text", `account=12345678; key sk-key-0123`, `account=[redacted]; key [redacted]`},
		{"cut JSON", `{"account":12345678`, `{"account":"[redacted]"`},
		{"cut JSON, escaped in an open string", `{"message":"key \u0073k-key-0123 and`, `{"message":"key [redacted] and`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(provider.RedactCredentials([]byte(c.in), creds))
			assert.Equal(t, c.want, got)
			if json.Valid([]byte(c.in)) {
				assert.True(t, json.Valid([]byte(got)), got)
			}
		})
	}
}

// A credential that spans JSON tokens is still redacted, though the body
// is then no longer JSON: a leak is worse than an SDK's parse error.
func TestACredentialAcrossJSONTokensIsRedactedAnyway(t *testing.T) {
	got := provider.RedactCredentials([]byte(`{"a":"x","b":"y"}`), []string{`x","b`})
	assert.Equal(t, `{"a":"[redacted]":"y"}`, string(got))
}
