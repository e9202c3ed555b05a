package openai

import (
	"errors"
	"fmt"
	"io"
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
// {"error": …} event in a chat stream or an error object in a JSON body. It
// is an ordinary failure, save one that says the quota or credit is spent
// (InsufficientQuota), which is fatal as the same error sent as a 429 is;
// an error status is *transport.HTTPError instead.
type UpstreamError struct {
	// Source is the name of the source that reported the error.
	Source string
	// Message is the upstream's text, trimmed, with the API key redacted.
	Message string

	quota bool
}

// InsufficientQuota reports whether the error's type or code says the
// account's quota or credit is spent ("insufficient_quota", …;
// provider.ErrorBody.InsufficientQuota): the gateway then classifies it as
// fatal, not as a failure.
func (e *UpstreamError) InsufficientQuota() bool { return e.quota }

// Error implements the error interface.
func (e *UpstreamError) Error() string {
	return fmt.Sprintf("openai: source %q reported an error: %s", e.Source, e.Message)
}

// Code returns "PGW-UPSTREAM".
func (e *UpstreamError) Code() string { return "PGW-UPSTREAM" }
