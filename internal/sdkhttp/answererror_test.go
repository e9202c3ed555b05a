package sdkhttp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/sdkhttp"
)

// A 2xx JSON answer whose top level holds an error is a failure, unless it
// names a resource that failed; either way it shows no credential, and an
// answer without an error is handed back untouched.
func TestAnAnswerWithAnErrorObject(t *testing.T) {
	src := config.Source{Name: "a", BaseURL: "https://h.example/v1?account=12345678", APIKey: config.NewSecret("sk-key-0123")}
	cases := []struct {
		name, body, want string
		status           int // of the failure; 0: none
		message          string
	}{
		{"no error", `{"id":"c1","choices":[{"message":{"content":"say \"error\" 12345678"}}]}`, `{"id":"c1","choices":[{"message":{"content":"say \"error\" 12345678"}}]}`, 0, ""},
		{"null error", `{"object":"response","error":null,"n":12345678}`, `{"object":"response","error":null,"n":12345678}`, 0, ""},
		{"spaced null error", `{"object":"response", "error" :  null}`, `{"object":"response", "error" :  null}`, 0, ""},
		{"anthropic error", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, 529, "in a 200 answer: busy (overloaded_error)"},
		{"nested error", `{"data":[{"error":{"message":"x"}}]}`, `{"data":[{"error":{"message":"x"}}]}`, 0, ""},
		{"error object", `{"error":{"message":"key sk-key-0123","type":"server_error","account":12345678}}`, `{"error":{"message":"key [redacted]","type":"server_error","account":"[redacted]"}}`, 500, "in a 200 answer: key [redacted] (server_error)"},
		{"rate limit", `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, 429, "in a 200 answer: slow down (rate_limit_exceeded)"},
		{"code only", `{"error":{"code":"invalid_api_key"}}`, `{"error":{"code":"invalid_api_key"}}`, 401, "in a 200 answer: invalid_api_key"},
		{"code and type only", `{"error":{"code":"no_such_model","type":"invalid_request_error","message":""}}`, `{"error":{"code":"no_such_model","type":"invalid_request_error","message":""}}`, 400, "in a 200 answer: no_such_model (invalid_request_error)"},
		{"empty error", `{"error":{}}`, `{"error":{}}`, 500, "in a 200 answer: an error object in a 200 answer"},
		{"error text", `{"error":"no account 12345678"}`, `{"error":"no account [redacted]"}`, 500, "in a 200 answer: no account [redacted]"},
		{"failed resource", `{"object":"fine_tuning.job","error":{"message":"account 12345678","param":12345678}}`, `{"object":"fine_tuning.job","error":{"message":"account [redacted]","param":"[redacted]"}}`, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sdkhttp.AnswerError([]byte(c.body), src)
			assert.Equal(t, c.want, string(got))
			if c.status == 0 {
				assert.NoError(t, err)
				return
			}
			var he *errs.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, c.status, he.StatusCode)
			assert.Equal(t, c.message, he.Message)
		})
	}
}
