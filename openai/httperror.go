package openai

import (
	"encoding/json"
	"net/http"

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
// of the status its type or code stands for and knowing whether the error
// says the quota is spent (provider.ParseAnswerError).
func upstreamError(src transport.Source, errField json.RawMessage) *UpstreamError {
	eb := provider.ParseAnswerError(src, errField)
	msg := eb.Text()
	if msg == "" {
		msg = "an error object without a message, type or code"
	}
	return &UpstreamError{Source: src.Name, Message: msg, StatusCode: eb.Status(), quota: eb.InsufficientQuota()}
}
