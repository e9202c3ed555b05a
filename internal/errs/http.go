package errs

import (
	"fmt"
	"time"
)

// HTTPError is an upstream HTTP failure, returned by a transport or by a
// pgw.Call function so that the gateway classifies it: 429 is a
// throttle, 5xx a failure, 401/403 fatal, 400/404/413/422 a caller error.
type HTTPError struct {
	// StatusCode is the upstream's HTTP status.
	StatusCode int
	// RetryAfter is the upstream's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Message is the upstream's error text, trimmed; never credentials.
	Message string
}

// Error implements the error interface.
func (e *HTTPError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("upstream http %d (retry after %v): %s", e.StatusCode, e.RetryAfter, e.Message)
	}
	return fmt.Sprintf("upstream http %d: %s", e.StatusCode, e.Message)
}

// Code returns "PGW-HTTP".
func (e *HTTPError) Code() string { return "PGW-HTTP" }
