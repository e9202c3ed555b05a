package errs

import (
	"testing"
	"time"
)

// An HTTPError built without a message (as a Call function often builds one)
// reads as the status text, not as a sentence cut after its colon.
func TestHTTPErrorWithoutAMessageEndsInTheStatusText(t *testing.T) {
	for _, tc := range []struct {
		e    HTTPError
		want string
	}{
		{HTTPError{StatusCode: 429, RetryAfter: 30 * time.Second, Scope: "T", Source: "b"},
			"upstream http 429 (retry after 30s) from scope T, source b: Too Many Requests"},
		{HTTPError{StatusCode: 502}, "upstream http 502: Bad Gateway"},
		{HTTPError{StatusCode: 599}, "upstream http 599"},
		{HTTPError{StatusCode: 503, Message: "overloaded"}, "upstream http 503: overloaded"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
