package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// sdkError has the shape of openai-go's and anthropic-sdk-go's API errors:
// StatusCode, Request and Response fields, and the body through RawJSON.
type sdkError struct {
	StatusCode int
	Request    *http.Request
	Response   *http.Response
	raw        string
}

func (e *sdkError) Error() string {
	return fmt.Sprintf("API error: %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}
func (e *sdkError) RawJSON() string { return e.raw }

func newSDKError(status int, h http.Header, raw string) *sdkError {
	if h == nil {
		h = http.Header{}
	}
	return &sdkError{StatusCode: status, Response: &http.Response{StatusCode: status, Header: h}, raw: raw}
}

// headerlessError has the shape of go-openai's APIError: a status, no headers.
type headerlessError struct {
	HTTPStatusCode int
	Message        string
}

func (e *headerlessError) Error() string { return e.Message }

// ownStatusError implements retry.StatusError.
type ownStatusError struct {
	status int
	h      http.Header
}

func (e ownStatusError) Error() string           { return "own error" }
func (e ownStatusError) HTTPStatus() int         { return e.status }
func (e ownStatusError) HTTPHeader() http.Header { return e.h }

func TestClassifyUnderstandsSDKErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want retry.Class
	}{
		{"response field 429", newSDKError(429, nil, ""), retry.Throttle},
		{"response field 401", newSDKError(401, nil, ""), retry.Fatal},
		{"response field 403", newSDKError(403, nil, ""), retry.Fatal},
		{"response field 400", newSDKError(400, nil, ""), retry.CallerError},
		{"response field 422", newSDKError(422, nil, ""), retry.CallerError},
		{"response field 500", newSDKError(500, nil, ""), retry.Failure},
		{"response field 529", newSDKError(529, nil, ""), retry.Failure},
		{"insufficient quota 429", newSDKError(429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`), retry.Fatal},
		{"credit balance 400", newSDKError(400, nil, `{"type":"error","error":{"type":"credit_balance_too_low","message":"low"}}`), retry.Fatal},
		{"status field only", &headerlessError{HTTPStatusCode: 404, Message: "no such model"}, retry.CallerError},
		{"wrapped", fmt.Errorf("calling: %w", newSDKError(401, nil, "")), retry.Fatal},
		{"StatusError", ownStatusError{status: 429}, retry.Throttle},
		{"zero status is no status", &headerlessError{Message: "dial tcp: refused"}, retry.Failure},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, retry.Classify(c.err))
		})
	}
}

func TestStatusOfReadsTheResponseHeaders(t *testing.T) {
	h := http.Header{"Retry-After": {"3"}}
	status, got, ok := retry.StatusOf(fmt.Errorf("x: %w", newSDKError(429, h, "")))
	require.True(t, ok)
	assert.Equal(t, 429, status)
	assert.Equal(t, "3", got.Get("Retry-After"))
	assert.NotNil(t, retry.ResponseOf(newSDKError(429, h, "")))
	assert.Nil(t, retry.ResponseOf(errors.New("plain")))
}

func TestSDKThrottleWithRetryAfterHoldsTheSourceOffAndFailsOver(t *testing.T) {
	e := newEnv(t)
	calls := []string{}
	v, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		calls = append(calls, src.Name)
		if src.Name == "s1" {
			return "", transport.Usage{}, newSDKError(429, http.Header{"Retry-After": {"2"}}, "")
		}
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"s1", "s2"}, calls)
	assert.Empty(t, e.sleeper.taken(), "the Retry-After is a hold-off, not a backoff: fail-over is at once")
	assert.Equal(t, 2*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()))
	assert.Equal(t, gate.Closed, e.snapshot(t, "s1").State, "a throttle is no breaker failure")
	e.requireNothingHeld(t)
}

func TestSDKUnauthorizedOpensTheBreaker(t *testing.T) {
	e := newEnv(t)
	_, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		if src.Name == "s1" {
			return "", transport.Usage{}, newSDKError(401, nil, `{"error":{"message":"bad key sk-secret","code":"invalid_api_key"}}`)
		}
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State)
}

func TestSDKBadRequestIsReturnedAtOnceAsTheSDKError(t *testing.T) {
	e := newEnv(t)
	n := 0
	_, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		n++
		return "", transport.Usage{}, newSDKError(400, nil, `{"error":{"message":"bad","type":"invalid_request_error"}}`)
	})
	require.Error(t, err)
	assert.Equal(t, 1, n, "a bad request is not re-sent to the backup")
	var se *sdkError
	require.ErrorAs(t, err, &se, "the SDK's own error type is still reachable")
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 400, he.StatusCode)
	assert.Equal(t, "bad (invalid_request_error)", he.Message)
	assert.Equal(t, gate.Closed, e.snapshot(t, "s1").State)
}

func TestAsHTTPErrorRedactsTheKey(t *testing.T) {
	d, ok := retry.AsHTTPError(newSDKError(401, nil, `{"error":{"message":"Incorrect API key provided: sk-secret"}}`),
		config.ProviderOpenAI, "sk-secret", time.Now())
	require.True(t, ok)
	var he *errs.HTTPError
	require.ErrorAs(t, d, &he)
	assert.NotContains(t, he.Message, "sk-secret")
	_, ok = retry.AsHTTPError(&errs.HTTPError{StatusCode: 500}, config.ProviderOpenAI, "", time.Now())
	assert.False(t, ok, "pgw's own HTTPError needs no description")
}

// urlTextError is an SDK error whose text shows its request's URL and the
// answer's body, as anthropic-sdk-go's does.
type urlTextError struct {
	StatusCode int
	Request    *http.Request
	Response   *http.Response
	raw        string
}

func (e urlTextError) RawJSON() string { return e.raw }
func (e urlTextError) Error() string {
	return fmt.Sprintf("%s %q: %d %s", e.Request.Method, e.Request.URL, e.StatusCode, e.raw)
}

// The description's text is the SDK's without the key, the request's
// credential header and URL query values, nor a header echoed in the body;
// errors.As still reaches the SDK's error, whose own text is unchanged.
func TestAsHTTPErrorsTextShowsNoCredentialOfTheRequest(t *testing.T) {
	req, err := http.NewRequest(http.MethodPost, "https://h.example/v1/messages?key=qk-0123456789", nil)
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", "sk-sent-0123")
	sdk := urlTextError{StatusCode: 401, Request: req, Response: &http.Response{StatusCode: 401, Header: http.Header{}},
		raw: `{"error":{"message":"bad sk-secret, sk-sent-0123 (x-api-key: px-777777777)"}}`}
	d, ok := retry.AsHTTPError(sdk, config.ProviderAnthropic, "sk-secret", time.Now())
	require.True(t, ok)
	assert.Equal(t, `POST "https://h.example/v1/messages?key=[redacted]": 401 {"error":{"message":"bad [redacted], [redacted] (x-api-key: [redacted])"}}`, d.Error())
	var he *errs.HTTPError
	require.ErrorAs(t, d, &he)
	assert.Equal(t, "bad [redacted], [redacted] (x-api-key: [redacted])", he.Message)
	var got urlTextError
	require.ErrorAs(t, d, &got)
	assert.Contains(t, got.Error(), "sk-sent-0123", "the SDK's own error is as it was")
}
