package transport_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/transport"
)

func TestObserveResponseReachesEverySinkInOrder(t *testing.T) {
	var got []string
	ctx := transport.WithResponseSink(context.Background(), func(status int, h http.Header) {
		got = append(got, "outer:"+h.Get("X-Ratelimit-Remaining-Requests"))
	})
	ctx = transport.WithResponseSink(ctx, func(status int, h http.Header) {
		got = append(got, "inner")
	})
	transport.ObserveResponse(ctx, 200, http.Header{"X-Ratelimit-Remaining-Requests": {"7"}})
	transport.ObserveResponse(context.Background(), 200, nil) // no sink: nothing happens
	assert.Equal(t, []string{"outer:7", "inner"}, got)
}
