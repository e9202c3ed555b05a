package retry_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/retry"
)

// auditAnswerErr is an SDK's API error for an error event in a stream, as
// anthropic-sdk-go builds it: the stream's 200 response, the event's body.
type auditAnswerErr struct {
	Response *http.Response
	raw      string
}

func (e *auditAnswerErr) Error() string   { return "200 OK " + e.raw }
func (e *auditAnswerErr) RawJSON() string { return e.raw }

func TestClassifyAnSDKErrorThatCarriesA2xxByItsType(t *testing.T) {
	for typ, want := range map[string]retry.Class{
		"rate_limit_error":      retry.Throttle,
		"authentication_error":  retry.Fatal,
		"permission_error":      retry.Fatal,
		"invalid_request_error": retry.CallerError,
		"overloaded_error":      retry.Failure,
		"api_error":             retry.Failure,
	} {
		err := &auditAnswerErr{Response: &http.Response{StatusCode: 200, Header: http.Header{}},
			raw: `{"type":"error","error":{"type":"` + typ + `","message":"m"}}`}
		assert.Equal(t, want, retry.Classify(err), typ)
	}
	// Without a body it says nothing: the source's failure, never a success.
	assert.Equal(t, retry.Failure, retry.Classify(&auditAnswerErr{Response: &http.Response{StatusCode: 200}}))
	// An OpenAI-shaped body is read too.
	assert.Equal(t, retry.Throttle, retry.Classify(&auditAnswerErr{Response: &http.Response{StatusCode: 200},
		raw: `{"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}}`}))
}
