// Package upstreamhttp builds the connection pool the default transports and
// the governed http.Client send through, so that all of them dial, time out
// and keep connections alike.
package upstreamhttp

import (
	"net"
	"net/http"
	"time"
)

// NewClient returns an http.Client with a pool of its own that bounds
// connection set-up only: an attempt's total time, first token included, is
// bounded through its context, since a client Timeout would cut a streamed
// answer at that instant.
func NewClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          256,
		// Many concurrent attempts go to few hosts; the default of 2 idle
		// connections per host would redial constantly.
		MaxIdleConnsPerHost: 64,
	}}
}
