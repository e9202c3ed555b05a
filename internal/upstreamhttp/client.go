// Package upstreamhttp builds the connection pool the default transports and
// the governed http.Client send through, so that all of them dial, time out
// and keep connections alike.
package upstreamhttp

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pgw-go/pgw/provider"
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
	}, CheckRedirect: checkRedirect}
}

// maxRedirects is how many redirects one request follows, as net/http's
// default policy does.
const maxRedirects = 10

// checkRedirect follows at most maxRedirects redirects and sends no
// credential to a host other than the one the request was made to, nor over
// plain HTTP after HTTPS. net/http drops Authorization on a redirect to
// another domain, but not the api-key and x-api-key headers Azure and
// Anthropic sources carry, and not between ports of one host: a redirecting
// upstream or proxy would receive the key.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("pgw: stopped after 10 redirects")
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Host, first.Host) || (first.Scheme == "https" && req.URL.Scheme != "https") {
		provider.DropAuth(req.Header)
	}
	return nil
}
