package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/upstreamhttp"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// messagesPath is joined onto Source.BaseURL (which includes /v1).
const messagesPath = "/messages"

// userAgent identifies pgw to upstreams and their logs.
const userAgent = "pgw-anthropic/1"

// DefaultMaxTokens is the max_tokens of a request that sets no MaxTokens on
// a source without MAX_TOKENS: the API requires one.
const DefaultMaxTokens = 4096

// Client speaks Anthropic's Messages API to any source it is handed. It
// holds no per-source state. The zero value is not usable; call New. Safe
// for concurrent use.
type Client struct {
	hc  *http.Client
	now func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send through hc instead of its own. hc
// should have no Timeout (a streamed answer would be cut at that instant);
// bound calls through ctx instead. A nil hc keeps the default.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithNow sets the clock that turns an HTTP-date retry-after into a
// duration. A nil now keeps time.Now.
func WithNow(now func() time.Time) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
	}
}

// New returns a client with a dedicated connection pool, or the http.Client
// given by WithHTTPClient.
func New(opts ...Option) *Client {
	c := &Client{hc: upstreamhttp.NewClient(), now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CloseIdleConnections closes the idle keep-alive connections of the
// client's pool; in-flight requests are not affected.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

var (
	_ transport.ChatTransport = (*Client)(nil)
	_ transport.ChatValidator = (*Client)(nil)
)

// post sends payload to the source's messages endpoint and returns the
// response when its status is 2xx; any other status is read, closed and
// returned as *transport.HTTPError (marked by errs.SpentQuota when its body
// says the credit is spent). A cancelled ctx is returned as is.
func (c *Client) post(ctx context.Context, src transport.Source, payload []byte) (*http.Response, error) {
	u := src.URL(messagesPath)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil || u == "" {
		return nil, fmt.Errorf("anthropic: source %q: bad base URL %q", src.Name, src.RedactedBaseURL())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", userAgent)
	provider.SetAuth(req.Header, config.ProviderAnthropic, src.APIKey.Reveal())
	observe.InjectHeaders(ctx, req.Header) // an observer's trace context
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, whose query may hold a credential
		}
		return nil, fmt.Errorf("anthropic: source %q: post %s: %w", src.Name, config.RedactURL(u), err)
	}
	transport.ObserveResponse(ctx, resp.StatusCode, resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		body := provider.ReadErrorBody(resp.Body, provider.Credentials(src))
		ra, _ := provider.RetryAfter(resp.Header, c.now())
		eb := provider.ParseSourceError(config.ProviderAnthropic, src, resp.StatusCode, body)
		he := &errs.HTTPError{
			StatusCode: resp.StatusCode,
			RetryAfter: ra,
			Message:    eb.Text(),
			Path:       req.URL.Path, // never the query, which may hold a credential
		}
		if eb.InsufficientQuota() {
			return nil, errs.SpentQuota(he) // fatal whatever the status, as in the http client
		}
		return nil, he
	}
	return resp, nil
}
