package pgw

import (
	"context"
	"errors"
	"net/http"

	"github.com/pgw-go/pgw/internal/upstreamhttp"
	"github.com/pgw-go/pgw/retry"
)

// SDKBaseURL is the base URL to give an SDK that sends through
// GatewayClient.HTTPClient. The address is never dialled (the .invalid
// top-level domain cannot resolve): the governed client takes the request's
// path relative to it and sends it to the source that admission picks.
const SDKBaseURL = "http://pgw.invalid/"

// MaxSDKRequestBody bounds the request body the governed client keeps to
// re-send on retries and fail-over (32 MiB: a chat request with several
// large images fits). A larger body fails the request with a
// *RequestBodyTooLargeError before anything is sent.
const MaxSDKRequestBody = 32 << 20

// SDKVerdictStatus is the status of the answer the governed client
// synthesizes when pgw itself ends a call — every source's circuit open,
// the quota full under QUOTA_FULL=fail_fast, the stall budget or
// MAX_ATTEMPTS spent: 424 Failed Dependency. No SDK retries a 424 (they
// retry 408, 409, 429 and 5xx), and the answer also carries
// "x-should-retry: false", which openai-go and anthropic-sdk-go obey, so a
// verdict that already includes every retry pgw judged useful never starts
// a retry storm. The body is an error object in the provider's format (the
// SDK's error type carries it), with the pgw error's code (PGW-CB-OPEN,
// PGW-EXHAUSTED, PGW-UNAVAILABLE) as its code and "pgw_" plus the reason as
// its type; Retry-After and retry-after-ms carry pgw's certain wait when it
// has one, and X-Pgw-Code the code. ErrorFrom returns the pgw error itself.
const SDKVerdictStatus = http.StatusFailedDependency

// HTTPClient returns an *http.Client that turns every request into one
// governed call in scope: point an SDK at SDKBaseURL with it, and each of
// its requests gets admission (breaker, quota, pacer), retries with backoff,
// fail-over and the stall budget, exactly like Call.
//
// For each attempt the request is rebuilt for the source admission picked:
//
//   - the path relative to SDKBaseURL (and its query) is joined onto the
//     source's BASE_URL, whose own path and query (Azure's api-version)
//     are kept — so an OpenAI source's BASE_URL ends in /v1 (the OpenAI
//     SDKs send "chat/completions"); an Anthropic one may end in /v1 or
//     not (its SDK sends "v1/messages", and the version path is not sent
//     twice), so the BASE_URL pgw's own Anthropic transport takes serves
//     the SDK too;
//   - the source's API_KEY replaces whatever credentials the SDK set, in
//     the header of its PROVIDER (Authorization: Bearer, api-key,
//     x-api-key);
//   - an openai source's ORGANIZATION and PROJECT, when set, replace the
//     SDK's OpenAI-Organization and OpenAI-Project headers (without them
//     the SDK's pass as sent); an azure or anthropic source gets neither;
//   - when the source has a MODEL, it replaces the top-level "model" of a
//     JSON body; without one the SDK's model is sent as is;
//   - the body is kept in memory to be re-sent (at most MaxSDKRequestBody).
//
// The token estimate reserved against the source's TPM is about four bytes
// of the body per token, except that a file counts ImageTokenEstimate, as an
// image part of a ChatRequest does, whatever its size: each run of base64 of
// 1 KiB or more (an image or a file, as a data: URI or an Anthropic base64
// source), each file part of a multipart/form-data body (an audio upload),
// and a body of an audio, image or video type, application/octet-stream or
// application/pdf. The usage the answer reports settles it.
//
// The upstream's answer is classified from its raw status and headers: 429
// holds the source off for its Retry-After (seconds, HTTP date or
// retry-after-ms) and fails over at once; 401, 403 and a spent quota open
// the source's breaker; 5xx, 529, timeouts and connection errors fail over
// with backoff; 400, 404, 413 and 422 are the request's fault and are
// returned to the SDK at once, as the upstream sent them. A JSON answer is
// read whole within the attempt (a cut body fails over) and settles the
// quota with its usage; one whose top level holds an "error" that is not
// null (some OpenAI-compatible servers answer 200 so) is the source's
// failure, as an error event is, unless it names a resource by an "object"
// field (a failed fine-tuning job, a background response), which is an
// answer. Every error body the SDK gets, the upstream's or such a resource,
// shows none of the source's credentials (its key, its BASE_URL's query
// values), and a JSON one is JSON still. An event stream (text/event-stream) is read ahead to
// its first event that carries content before the response is returned, so
// a source that fails before it is retried; after it the SDK reads the
// events as they come and the call holds its admission until the body is
// read to the terminal event ("data: [DONE]", message_stop,
// response.completed) or closed. A stream that ends without its terminal
// event, or reports an error event, is recorded as the source's failure —
// unless its finish reason came (every choice's finish_reason, Anthropic's
// stop_reason): some OpenAI-compatible servers send no "data: [DONE]", and
// such an answer is whole, as for pgw's own transports. The error a cut
// stream's body returns to the SDK after its first content event matches
// io.ErrUnexpectedEOF, as a cut stream of pgw's own transports does. A body
// the SDK closes early is Released. Usage events settle the quota.
//
// When pgw ends the call itself, the client answers with a synthesized
// SDKVerdictStatus response (see there). Turn the SDK's own retries off
// (openai-go and anthropic-sdk-go: option.WithMaxRetries(0)): pgw has done
// every useful retry by the time the SDK sees an answer, and an SDK retry
// would re-run the whole governed call.
//
// Requests to a host other than SDKBaseURL's, requests with a body over
// MaxSDKRequestBody, requests to a scope that is not configured
// (*UnknownScopeError) and requests after Close (ErrClosed) fail with that
// error, which the SDK wraps; nothing is sent. The client has no Timeout:
// each attempt is bounded by its source's TIMEOUT_S, the whole call by the
// request's context. Safe for concurrent use; make one per scope and keep
// it.
func (g *GatewayClient) HTTPClient(scope string) *http.Client {
	return &http.Client{Transport: &governedTransport{g: g, scope: scope}}
}

// ErrorFrom returns the pgw error behind err, or nil: the verdict behind a
// synthesized SDKVerdictStatus answer that an SDK turned into its own error
// type (found through the *http.Response an SDK error keeps in a Response
// field, as openai-go's and anthropic-sdk-go's do), or a pgw error in err's
// chain (*CircuitOpenError, *AllSourcesExhausted, *GatewayUnavailableError,
// *UnknownScopeError, *HTTPError, ErrClosed …). errors.As on the result
// reaches the call's last attempt error too.
func ErrorFrom(err error) error {
	if err == nil {
		return nil
	}
	if resp := retry.ResponseOf(err); resp != nil && resp.Request != nil {
		if v, ok := resp.Request.Context().Value(verdictKey{}).(error); ok {
			return v
		}
	}
	var (
		coe *CircuitOpenError
		ase *AllSourcesExhausted
		gue *GatewayUnavailableError
		use *UnknownScopeError
		rbe *RequestBodyTooLargeError
		he  *HTTPError
	)
	switch {
	case errors.As(err, &coe):
		return coe
	case errors.As(err, &ase):
		return ase
	case errors.As(err, &gue):
		return gue
	case errors.As(err, &use):
		return use
	case errors.As(err, &rbe):
		return rbe
	case errors.Is(err, ErrClosed):
		return ErrClosed
	case errors.As(err, &he):
		return he
	}
	return nil
}

// verdictKey keys the pgw error in the context of a synthesized answer's
// Request, where ErrorFrom finds it.
type verdictKey struct{}

// upstreamClient returns the pool the governed client sends through: the
// one given with WithHTTPClient, else the gateway's own.
func (g *GatewayClient) upstreamClient() *http.Client {
	g.sdkOnce.Do(func() {
		if g.sdkHTTP == nil {
			g.sdkHTTP, g.ownSDKHTTP = upstreamhttp.NewClient(), true
		}
	})
	return g.sdkHTTP
}

// withVerdict returns a copy of req whose context carries the pgw error.
func withVerdict(req *http.Request, err error) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), verdictKey{}, err))
}
