package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// httpError turns a non-2xx answer to req into *errs.HTTPError: Retry-After
// in every form the provider sends it, and the error body read in the
// source's provider format, the source's credentials redacted; marked as a
// spent quota (errs.SpentQuota) when the body says so, as the gateway's
// http client marks it. The caller closes the body.
func (c *Client) httpError(resp *http.Response, src transport.Source, req *http.Request) error {
	body := provider.ReadErrorBody(resp.Body, provider.Credentials(src))
	ra, _ := provider.ErrorRetryAfter(resp.StatusCode, resp.Header, body, c.now()) // Gemini says when in the body
	eb := provider.ParseSourceError(src.Provider, src, resp.StatusCode, body)
	he := withPath(&errs.HTTPError{StatusCode: resp.StatusCode, RetryAfter: ra, Message: eb.Text()}, req)
	if eb.InsufficientQuota() {
		return errs.SpentQuota(he)
	}
	return he
}

// upstreamError turns the value of an "error" field sent inside a 2xx
// answer (an error event of a stream, or a JSON body) into *UpstreamError,
// which knows whether the error says the quota is spent.
func upstreamError(src transport.Source, errField json.RawMessage) *UpstreamError {
	body := append(append([]byte(`{"error":`), errField...), '}')
	eb := provider.ParseSourceError(src.Provider, src, http.StatusOK, body)
	return &UpstreamError{Source: src.Name, Message: eb.Text(), quota: eb.InsufficientQuota()}
}

// hasError reports whether an "error" field holds something.
func hasError(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}
