package pgw

import (
	"context"
	"errors"

	"github.com/pgw-go/pgw/retry"
)

// Call runs fn as one governed call in scope — any configured scope, e.g. one
// listed as PGW_SCOPES=CHAT,RERANK with RERANK__SOURCES set — with the same
// admission, breaker, quotas, retries, fail-over and stall budget as the
// typed methods. fn is one attempt on one source: it gets a ctx bounded by
// the source's TIMEOUT_S and returns its value, the tokens it used (zero when
// unknown) and an error. Return a *HTTPError for an upstream HTTP failure so
// that it is classified (429 throttles, 5xx fails over, 401/402/403 open
// the breaker, 400/404/413/422 return at once); any other error is an
// ordinary failure, and a done ctx a cancellation. A panic in fn gives back
// what the attempt held and is re-raised.
//
// An SDK's error that fn returns comes back (alone or as the Last of
// pgw's wrappers) with the SDK's text but no credential in it: the
// source's key and BASE_URL query values, the credentials of the request
// the SDK sent when the error carries it (openai-go's and
// anthropic-sdk-go's Request and Response fields, a *url.Error: its
// credential headers, its URL's query values and password) and any
// credential header's value an upstream echoed are redacted. errors.As and errors.Is still reach the SDK's own error value,
// unredacted — its fields and Error are the SDK's, for a caller who digs
// them out on purpose.
func Call[T any](ctx context.Context, gw *GatewayClient, scope string, fn func(ctx context.Context, src Source) (T, Usage, error)) (T, error) {
	var zero T
	if gw == nil {
		return zero, errors.New("pgw: Call with a nil *GatewayClient")
	}
	if fn == nil {
		return zero, errors.New("pgw: Call with a nil function")
	}
	sc, err := gw.scope(scope)
	if err != nil {
		return zero, err
	}
	c, err := gw.enterPlain(ctx)
	if err != nil {
		return zero, err
	}
	ended := false
	defer func() {
		if !ended { // fn panicked: release the call, let the panic go on
			_ = c.end(nil)
		}
	}()
	v, err := retry.RunIn(&c.cc, sc.loop, 0, fn, &c.first)
	ended = true
	return v, c.end(err)
}
