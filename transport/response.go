package transport

import (
	"context"
	"net/http"

	"github.com/pgw-go/pgw/internal/respsink"
)

// ResponseSink receives the status and headers of every upstream HTTP
// response an attempt gets, successful or not. The gateway installs one per
// attempt (rate-limit headers are read from it); it must not keep h after it
// returns and must be cheap.
type ResponseSink func(status int, h http.Header)

type sinkKey = respsink.Key

// WithResponseSink returns a ctx whose attempts report every upstream
// response to sink (after any sink already in ctx).
func WithResponseSink(ctx context.Context, sink ResponseSink) context.Context {
	if prev := sinkOf(ctx); prev != nil {
		next := sink
		sink = func(status int, h http.Header) {
			prev(status, h)
			next(status, h)
		}
	}
	return context.WithValue(ctx, sinkKey{}, sink)
}

// ObserveResponse hands an upstream response's status and headers to the
// sink that ctx carries, if any. Every transport that talks HTTP calls it
// once per response, before it reads the body, so that the gateway learns
// what the provider said about its limits even from an answer that fails.
func ObserveResponse(ctx context.Context, status int, h http.Header) {
	switch s := ctx.Value(sinkKey{}).(type) {
	case ResponseSink:
		if s != nil {
			s(status, h)
		}
	case respsink.Receiver:
		s.Receive(status, h)
	}
}

// sinkOf is the sink ctx carries, in either form, or nil.
func sinkOf(ctx context.Context) ResponseSink {
	switch s := ctx.Value(sinkKey{}).(type) {
	case ResponseSink:
		if s != nil {
			return s
		}
	case respsink.Receiver:
		return s.Receive
	}
	return nil
}
