package retry

import (
	"context"
	"errors"
	"strings"

	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
	"time"
)

// Class is how a loop treats an attempt's outcome.
type Class uint8

// The classes. Success is only for a nil error.
const (
	// Success: the attempt delivered. Breaker Success; tokens settled.
	Success Class = iota
	// Failure: 5xx, timeout, connection error, anything unrecognised.
	// Breaker Failure; the call backs off and fails over.
	Failure
	// Throttle: 429. Not a breaker failure (Released); the pacer shrinks and
	// the source is held off until the upstream's Retry-After.
	Throttle
	// Fatal: 401/402/403 or an exhausted upstream quota. Breaker Fatal
	// (open at once); the call fails over.
	Fatal
	// CallerError: 400/404/413/422, or a request a source cannot carry
	// (*transport.RequestError) — the request is wrong, not the source.
	// Released; returned at once without retry.
	CallerError
	// Canceled: a cancellation the attempt reports. Released; returned at
	// once.
	Canceled
)

// String returns the class's name.
func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Throttle:
		return "throttle"
	case Fatal:
		return "fatal"
	case CallerError:
		return "caller_error"
	case Canceled:
		return "canceled"
	}
	return "class(?)"
}

// Classify is the default classification of an attempt's error. An
// HTTPStatusError (pgw.HTTPError, and the transports' own) anywhere in err's chain
// is classified by status: 429 Throttle; 401, 402 and 403 Fatal; 400, 404,
// 413 and 422 CallerError; anything else (5xx, 408, 409 …) Failure — except
// that an answer whose message says the quota or credit is spent (a code
// such as "insufficient_quota" or "billing_hard_limit_reached",
// provider.NamesSpentQuota) is Fatal whatever its status. context.Canceled is
// Canceled, and a *transport.RequestError (a request the source cannot
// carry) is CallerError. Everything else — context.DeadlineExceeded (the
// source's timeout), connection errors, a cut stream — is Failure.
//
// Errors of client libraries are understood without mapping code: any
// error that carries an HTTP status (StatusOf: a StatusError, or an SDK
// error with a Response *http.Response or StatusCode field) is classified by
// that status, and one that says the quota is spent is Fatal.
//
// The loops check the caller's own ctx before classifying: a call whose ctx
// is done returns ctx.Err() whatever the attempt said.
func Classify(err error) Class {
	if err == nil {
		return Success
	}
	if c, ok := classifyStatusError(err); ok {
		return c
	}
	var he HTTPStatusError
	if errors.As(err, &he) {
		return classifyStatus(he.HTTPStatus(), he.Error(), he.RetryAfterHint() > 0)
	}
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	var re *transport.RequestError
	if errors.As(err, &re) {
		// A request the source cannot carry: no other attempt would do
		// better.
		return CallerError
	}
	return Failure
}

// HTTPStatusError is an upstream HTTP failure, whichever package defines
// it: pgw.HTTPError, which Call functions and custom transports return, and
// the HTTPError of the lower packages both implement it.
type HTTPStatusError interface {
	error
	// HTTPStatus is the upstream's HTTP status.
	HTTPStatus() int
	// RetryAfterHint is the upstream's Retry-After, 0 when absent.
	RetryAfterHint() time.Duration
}

// RetryAfterOf returns the Retry-After of the upstream HTTP failure in
// err's chain, 0 when there is none.
func RetryAfterOf(err error) time.Duration {
	var he HTTPStatusError
	if errors.As(err, &he) {
		return he.RetryAfterHint()
	}
	return 0
}

// classifyStatus classifies an upstream answer of status with text;
// retryAfter reports that the answer said when to try again.
func classifyStatus(status int, text string, retryAfter bool) Class {
	if insufficientQuota(text, retryAfter) {
		return Fatal
	}
	switch status {
	case 429:
		return Throttle
	case 401, 402, 403:
		return Fatal
	case 400, 404, 413, 422:
		return CallerError
	}
	return Failure
}

// insufficientQuota recognises the providers' "your quota is spent" answers,
// which come as 429 but will not clear by waiting a few seconds: a code
// provider.ErrorBody.InsufficientQuota knows (provider.NamesSpentQuota),
// or their words. The words "exceeded your current quota" alone are not
// enough when the answer said when to try again (retryAfter): Gemini words
// its rate limits so, with the time to wait in the body.
func insufficientQuota(msg string, retryAfter bool) bool {
	m := strings.ToLower(msg)
	return provider.NamesSpentQuota(m) || strings.Contains(m, "insufficient quota") ||
		!retryAfter && strings.Contains(m, "exceeded your current quota")
}
