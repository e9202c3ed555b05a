package openai

import (
	"bytes"
	"context"
	"encoding/json"
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

// userAgent identifies pgw to upstreams and their logs.
const userAgent = "pgw-openai/1"

// Client speaks the OpenAI-compatible HTTP API to any source it is handed.
// It holds no per-source state: the source (base URL, API key, model) comes
// with every call. The zero value is not usable; call New. Safe for
// concurrent use.
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

// WithNow sets the clock that turns an HTTP-date Retry-After into a
// duration; tests pass a fixed instant. A nil now keeps time.Now.
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

// The client implements all three transports.
var (
	_ transport.ChatTransport  = (*Client)(nil)
	_ transport.EmbedTransport = (*Client)(nil)
	_ transport.OCRTransport   = (*Client)(nil)
)

// endpoint joins path onto the source's base URL (which includes /v1),
// keeping the base URL's query (Azure's api-version).
func endpoint(src transport.Source, path string) string {
	return src.URL(path)
}

// post sends body as JSON to path on src and returns the response when its
// status is 2xx; any other status is read, closed and returned as
// *transport.HTTPError. A cancelled ctx is returned as is.
func (c *Client) post(ctx context.Context, src transport.Source, path string, body any, stream bool) (*http.Response, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: source %q: encode request: %w", src.Name, err)
	}
	url := endpoint(src, path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("openai: source %q: bad base URL %q", src.Name, src.RedactedBaseURL())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	provider.SetAuth(req.Header, src.Provider, src.APIKey.Reveal())
	provider.SetAccount(req.Header, src)
	observe.InjectHeaders(ctx, req.Header) // an observer's trace context
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("openai: source %q: post %s: %w", src.Name, config.RedactURL(url), redactErr(err))
	}
	transport.ObserveResponse(ctx, resp.StatusCode, resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.httpError(resp, src, req)
	}
	return resp, nil
}

// decodeJSON reads a whole non-streamed answer into v, mapping a read cut
// short by ctx to ctx.Err().
func decodeJSON(ctx context.Context, src transport.Source, what string, resp *http.Response, v any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("openai: source %q: decode %s response: %w", src.Name, what, err)
	}
	return nil
}

// wireUsage is the OpenAI "usage" object. The details are absent on older
// models and on many compatible servers.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *wireUsage) usage() transport.Usage {
	if u == nil {
		return transport.Usage{}
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	out := transport.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedPromptTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// redactErr keeps a transport error's text from showing the request URL's
// query (which may hold a credential): *url.Error prints the URL, so its
// URL is replaced by its redacted form: raw, or the URL a redirect went
// to, which may carry the query on.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: config.RedactURL(ue.URL), Err: ue.Err}
	}
	return err
}

// withPath records on e the path of the request that failed (never its
// query, which may hold a credential), so the error names what was asked.
func withPath(e *errs.HTTPError, req *http.Request) *errs.HTTPError {
	if e != nil && req != nil && req.URL != nil && e.Path == "" {
		e.Path = req.URL.Path
	}
	return e
}
