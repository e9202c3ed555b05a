package openai

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrStreamCut is matched (errors.Is) by every *StreamCutError.
var ErrStreamCut = errors.New("openai: chat stream cut before its end")

// StreamCutError reports a chat stream whose body ended or broke before
// "data: [DONE]" and before any finish_reason: the answer is incomplete. It
// matches ErrStreamCut and io.ErrUnexpectedEOF with errors.Is, and is not a
// context error, so the gateway classifies it as an ordinary failure.
type StreamCutError struct {
	// Source is the name of the source whose stream was cut.
	Source string
	// Chunks is how many chunks Recv had returned before the cut.
	Chunks int
	// Err is the read error that ended the body, nil when the body ended
	// cleanly but early.
	Err error
}

// Error implements the error interface.
func (e *StreamCutError) Error() string {
	msg := fmt.Sprintf("openai: source %q: chat stream cut after %d chunks, before [DONE]", e.Source, e.Chunks)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrStreamCut, io.ErrUnexpectedEOF and the read error.
func (e *StreamCutError) Unwrap() []error {
	errs := []error{ErrStreamCut, io.ErrUnexpectedEOF}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Code returns "PGW-STREAM-CUT".
func (e *StreamCutError) Code() string { return "PGW-STREAM-CUT" }

// UpstreamError is an error the upstream reported inside a 2xx answer: an
// {"error": …} event in a chat stream or an error object in a JSON body. The
// gateway classes it as the same error sent as StatusCode — the status its
// type or code stands for (provider.ErrorBody.Status), as the gateway's
// http client classes it: invalid_api_key or authentication_error (401) and
// permission_error (403) are fatal, rate_limit_exceeded (429) a throttle,
// an unknown error (500) an ordinary failure — and one that says the quota
// or credit is spent (InsufficientQuota) is fatal whatever its status. An
// error status is *transport.HTTPError instead.
type UpstreamError struct {
	// Source is the name of the source that reported the error.
	Source string
	// Message is the upstream's text, trimmed, with the API key redacted;
	// the error's code and type when it sent no text.
	Message string
	// StatusCode is the HTTP status the error's type or code stands for
	// (provider.ErrorBody.Status); 500 for one the table does not know.
	StatusCode int

	quota bool
}

// InsufficientQuota reports whether the error's type or code says the
// account's quota or credit is spent ("insufficient_quota", …;
// provider.ErrorBody.InsufficientQuota): the gateway then classifies it as
// fatal, not as a failure.
func (e *UpstreamError) InsufficientQuota() bool { return e.quota }

// HTTPStatus returns StatusCode: the gateway classes the error by it, as it
// does an answer sent with that status.
func (e *UpstreamError) HTTPStatus() int { return e.StatusCode }

// RetryAfterHint returns 0: an error inside a 2xx answer says no
// Retry-After.
func (e *UpstreamError) RetryAfterHint() time.Duration { return 0 }

// Error implements the error interface.
func (e *UpstreamError) Error() string {
	return fmt.Sprintf("openai: source %q reported an error: %s", e.Source, e.Message)
}

// Code returns "PGW-UPSTREAM".
func (e *UpstreamError) Code() string { return "PGW-UPSTREAM" }
