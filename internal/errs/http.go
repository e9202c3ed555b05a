package errs

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HTTPError is an upstream HTTP failure, returned by a transport or by a
// pgw.Call function so that the gateway classifies it: 429 is a
// throttle, 5xx a failure, 401/402/403 fatal, 400/404/413/422 a caller error.
type HTTPError struct {
	// StatusCode is the upstream's HTTP status.
	StatusCode int
	// RetryAfter is the upstream's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Message is the upstream's error text, trimmed; never credentials.
	Message string
	// Scope and Source name where the failure came from; the gateway fills
	// them in when the error ends a call.
	Scope, Source string
	// Path is the request's URL path, without the query (which may hold a
	// credential); filled in by the transport when it knows it.
	Path string
}

// Error implements the error interface.
func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream http %d", e.StatusCode)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	sep := " from "
	for _, p := range [...]struct{ name, v string }{{"scope ", e.Scope}, {"source ", e.Source}, {"path ", e.Path}} {
		if p.v != "" {
			b.WriteString(sep + p.name + p.v)
			sep = ", "
		}
	}
	if msg := e.Message; msg != "" {
		b.WriteString(": " + msg)
	} else if msg := http.StatusText(e.StatusCode); msg != "" {
		b.WriteString(": " + msg)
	}
	return b.String()
}

// HTTPStatus returns StatusCode. The retry classifier recognises any error
// with HTTPStatus and RetryAfterHint, whichever package defines it.
func (e *HTTPError) HTTPStatus() int { return e.StatusCode }

// RetryAfterHint returns RetryAfter.
func (e *HTTPError) RetryAfterHint() time.Duration { return e.RetryAfter }

// Code returns "PGW-HTTP".
func (e *HTTPError) Code() string { return "PGW-HTTP" }

// Originer is an error that can name the scope and source it came from. The
// retry loops call WithOrigin on an attempt's error, so that the error that
// ends a call says where it happened.
type Originer interface {
	error
	// WithOrigin returns a copy of the error naming scope and source, or
	// the error itself when it names them already.
	WithOrigin(scope, source string) error
}

// WithOrigin returns a copy of e naming scope and source; e itself when it
// names a scope already (it may be shared, so it is never modified).
func (e *HTTPError) WithOrigin(scope, source string) error {
	if e == nil || e.Scope != "" || e.Source != "" {
		return e
	}
	c := *e
	c.Scope, c.Source = scope, source
	return &c
}

// SpentQuota marks e as a failure whose error says the account's quota or
// credit is spent (provider.ErrorBody.InsufficientQuota), for an error that
// did not come with the status of one: an error object in a 2xx answer, an
// error event of a stream. The retry classifier calls it fatal whatever its
// status, as it does the same error sent as a 429. errors.As reaches e.
func SpentQuota(e *HTTPError) error { return &spentQuota{he: e} }

// spentQuota is an HTTPError that says the quota is spent.
type spentQuota struct{ he *HTTPError }

func (e *spentQuota) Error() string           { return e.he.Error() }
func (e *spentQuota) Unwrap() error           { return e.he }
func (e *spentQuota) InsufficientQuota() bool { return true }

// WithOrigin returns a copy of e whose HTTPError names scope and source.
func (e *spentQuota) WithOrigin(scope, source string) error {
	if he, ok := e.he.WithOrigin(scope, source).(*HTTPError); ok {
		return &spentQuota{he: he}
	}
	return e
}
