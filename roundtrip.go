package pgw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/sdkhttp"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// RequestBodyTooLargeError fails a request through the governed client whose
// body is larger than MaxSDKRequestBody: it is not sent.
type RequestBodyTooLargeError struct {
	// Limit is MaxSDKRequestBody.
	Limit int64
}

// Error implements the error interface.
func (e *RequestBodyTooLargeError) Error() string {
	return fmt.Sprintf("pgw: request body larger than %d bytes: the governed http client keeps the body to re-send it and allows at most MaxSDKRequestBody", e.Limit)
}

// governedTransport is the RoundTripper of GatewayClient.HTTPClient.
type governedTransport struct {
	g     *GatewayClient
	scope string
}

var sdkBase, _ = url.Parse(SDKBaseURL)

// RoundTrip runs one governed call for req (see GatewayClient.HTTPClient).
func (t *governedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := t.prepare(req)
	if err != nil {
		return nil, err
	}
	sc, err := t.g.typed(t.scope)
	if err != nil {
		return nil, err
	}
	c, err := t.g.enter(req.Context())
	if err != nil {
		return nil, err
	}
	rel := strings.TrimLeft(strings.TrimPrefix(req.URL.EscapedPath(), sdkBase.Path), "/")
	if req.URL.RawQuery != "" {
		rel += "?" + req.URL.RawQuery
	}
	a := &sdkAttempt{g: t.g, req: req, rel: rel, body: body}
	var guard endGuard
	spec := retry.StreamSpec[sdkhttp.Item]{
		Open:      a.open,
		First:     func(it sdkhttp.Item) bool { return it.Content },
		Terminal:  func(it sdkhttp.Item) bool { return it.Terminal },
		Failed:    func(it sdkhttp.Item) error { return it.Err },
		Usage:     itemUsage,
		EstTokens: sdkhttp.EstimateTokens(body, req.Header.Get("Content-Type")),
		OnEnd: func() {
			guard.end()
			_ = c.end(nil)
		},
	}
	ended := false
	defer func() {
		if !ended { // the transport panicked: release the call, let the panic go on
			c.endOnPanic()
		}
	}()
	st, err := retry.OpenStream(&c.cc, sc.loop, spec)
	ended = true
	if err != nil {
		return t.answerError(req, c.end(err))
	}
	up := st.Items().(sdkhttp.Body).Response()
	if st.Held() {
		// Close interrupts the call: its body is closed, the admission given back.
		guard.arm(&c.cc, t.g, sc.name, func() { _ = st.Close() })
	}
	resp := &http.Response{
		Status:        up.Status,
		StatusCode:    up.StatusCode,
		Proto:         up.Proto,
		ProtoMajor:    up.ProtoMajor,
		ProtoMinor:    up.ProtoMinor,
		Header:        up.Header,
		Body:          &governedBody{st: st},
		ContentLength: -1,
		Trailer:       up.Trailer,
		Uncompressed:  up.Uncompressed,
		TLS:           up.TLS,
		Request:       req,
	}
	if w, ok := st.Items().(*sdkhttp.Whole); ok {
		resp.ContentLength = int64(len(w.Item.Raw))
		resp.Header.Set("Content-Length", strconv.Itoa(len(w.Item.Raw)))
	}
	return resp, nil
}

// sdkHost reports whether u names SDKBaseURL's host: compared without
// regard to case, as host names are, and with the default port of u's
// scheme allowed (80, or 443 for https).
func sdkHost(u *url.URL) bool {
	port, def := u.Port(), "80"
	if strings.EqualFold(u.Scheme, "https") {
		def = "443"
	}
	return strings.EqualFold(u.Hostname(), sdkBase.Hostname()) && (port == "" || port == def)
}

// prepare checks req and reads its body, closing it as a RoundTripper must.
func (t *governedTransport) prepare(req *http.Request) ([]byte, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if req.URL == nil || !sdkHost(req.URL) {
		host := ""
		if req.URL != nil {
			host = req.URL.Host
		}
		return nil, fmt.Errorf("pgw: the governed http client serves requests to %s only, not to host %q: give the SDK pgw.SDKBaseURL as its base URL", SDKBaseURL, host)
	}
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxSDKRequestBody+1))
	if err != nil {
		return nil, fmt.Errorf("pgw: reading the request body: %w", err)
	}
	if len(body) > MaxSDKRequestBody {
		return nil, &RequestBodyTooLargeError{Limit: MaxSDKRequestBody}
	}
	return body, nil
}

// answerError turns the error that ended a call into what the SDK gets: the
// upstream's own answer for a request it refused, a synthesized answer for
// a verdict of pgw, the error itself otherwise (cancellation, Close).
func (t *governedTransport) answerError(req *http.Request, err error) (*http.Response, error) {
	var (
		coe *CircuitOpenError
		ase *AllSourcesExhausted
		gue *GatewayUnavailableError
		ue  *upstreamError
	)
	var wait time.Duration
	switch {
	case errors.As(err, &coe):
		wait = coe.RetryAfter
	case errors.As(err, &ase):
		wait = ase.RetryAfter
	case errors.As(err, &gue):
	case errors.As(err, &ue):
		return ue.answer(req), nil
	default:
		return nil, err
	}
	return t.verdict(req, err, wait), nil
}

// verdict synthesizes the answer to a call pgw ended (SDKVerdictStatus).
func (t *governedTransport) verdict(req *http.Request, err error, wait time.Duration) *http.Response {
	code := "PGW-ERROR"
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		code = coded.Code()
	}
	typ := "pgw_" + strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(code, "PGW-"), "-", "_"))
	p := config.ProviderOpenAI
	if req.Header.Get("Anthropic-Version") != "" || req.Header.Get("X-Api-Key") != "" {
		p = config.ProviderAnthropic
	}
	body := provider.ErrorJSON(p, typ, code, err.Error())
	h := http.Header{
		"Content-Type":   {"application/json"},
		"Content-Length": {strconv.Itoa(len(body))},
		"X-Should-Retry": {"false"},
		"X-Pgw-Code":     {code},
	}
	if wait > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", SDKVerdictStatus, http.StatusText(SDKVerdictStatus)),
		StatusCode:    SDKVerdictStatus,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       withVerdict(req, err),
	}
}

// sdkAttempt sends one request to the sources admission picks.
type sdkAttempt struct {
	g                    *GatewayClient
	req                  *http.Request
	rel                  string
	body                 []byte
	modelOnce            sync.Once // the model is found only for a source with a MODEL
	hasModel             bool
	modelStart, modelEnd int
}

// bodyFor is the body to send to src: with src's MODEL in place of the
// body's top-level "model" when src has one and the body is JSON with a
// model. The body is searched for its model once, for the first such
// source (attempts of a hedged call may ask at once).
func (a *sdkAttempt) bodyFor(src config.Source) []byte {
	if src.Model == "" || len(a.body) == 0 {
		return a.body
	}
	a.modelOnce.Do(func() {
		if isJSON(a.req.Header.Get("Content-Type")) {
			a.modelStart, a.modelEnd, a.hasModel = sdkhttp.ModelSpan(a.body)
		}
	})
	if !a.hasModel {
		return a.body
	}
	return sdkhttp.WithModel(a.body, a.modelStart, a.modelEnd, src.Model)
}

// open is one attempt on src: send, classify the status, and read the body
// as items — a JSON answer whole, an event stream event by event.
func (a *sdkAttempt) open(ctx context.Context, src config.Source) (retry.Items[sdkhttp.Item], error) {
	target := src.URL(sourcePath(src, a.rel))
	if target == "" || src.BaseURL == "" {
		return nil, fmt.Errorf("pgw: source %q: BASE_URL %q is not an absolute URL to send to", src.Name, src.RedactedBaseURL())
	}
	body := a.bodyFor(src)
	out, err := http.NewRequestWithContext(ctx, a.req.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("pgw: source %q: BASE_URL %q: %w", src.Name, src.RedactedBaseURL(), redactErr(err, target))
	}
	if body == nil {
		out.Body, out.GetBody = http.NoBody, nil
	}
	out.Header = a.req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	out.Header.Del("Content-Length")
	// Left to net/http, which then undoes the compression it asked for: the
	// body must be read as the upstream meant it (events, usage).
	out.Header.Del("Accept-Encoding")
	provider.SetAuth(out.Header, src.Provider, src.APIKey.Reveal())
	provider.SetAccount(out.Header, src)
	observe.InjectHeaders(ctx, out.Header) // an observer's trace context
	resp, err := a.g.upstreamClient().Do(out)
	if err != nil {
		return nil, redactErr(err, target)
	}
	transport.ObserveResponse(ctx, resp.StatusCode, resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, upstreamFailure(src, resp, time.Now())
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case isEventStream(ct):
		ev := sdkhttp.NewEvents(resp)
		ev.Source = src
		ev.OnModel = func(m string) { observe.NoteResponseModel(ctx, m) }
		return ev, nil
	case isJSON(ct) || resp.ContentLength >= 0 && resp.ContentLength <= 1<<20:
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("pgw: source %q: reading the answer: %w", src.Name, redactErr(err, target))
		}
		b, failed := sdkhttp.AnswerError(b, src)
		if failed != nil && isJSON(ct) {
			return nil, failed
		}
		it := sdkhttp.Item{Raw: b, Content: true, Terminal: true}
		if isJSON(ct) {
			it.Usage = sdkhttp.JSONUsage(b)
			it.Model = sdkhttp.JSONModel(b)
			observe.NoteResponseModel(ctx, it.Model)
		}
		return &sdkhttp.Whole{Resp: resp, Item: it}, nil
	}
	return &sdkhttp.Chunks{Resp: resp}, nil
}

// sourcePath is rel as it is joined onto src's BASE_URL. Anthropic's SDKs
// send "v1/messages" relative to a base URL without the version path, while
// an Anthropic source's BASE_URL may carry it (pgw's own Anthropic transport
// needs it there): the version is then not sent twice, so one source serves
// both.
func sourcePath(src config.Source, rel string) string {
	if src.Provider != config.ProviderAnthropic || !strings.HasPrefix(rel, "v1/") {
		return rel
	}
	u, err := url.Parse(strings.TrimSpace(src.BaseURL))
	if err != nil || !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return rel
	}
	return strings.TrimPrefix(rel, "v1/")
}

// upstreamFailure reads a non-2xx answer (at most provider.MaxErrorBody of
// its body, src's credentials redacted: provider.ReadErrorBody) into the
// error the loop classifies, keeping the answer to return it as it is when
// the request itself was at fault.
func upstreamFailure(src config.Source, resp *http.Response, now time.Time) error {
	b := provider.ReadErrorBody(resp.Body, provider.Credentials(src))
	_ = resp.Body.Close()
	eb := provider.ParseSourceError(src.Provider, src, resp.StatusCode, b)
	ra, _ := provider.ErrorRetryAfter(resp.StatusCode, resp.Header, b, now)
	he := &errs.HTTPError{StatusCode: resp.StatusCode, RetryAfter: ra, Message: eb.Text()}
	if resp.Request != nil && resp.Request.URL != nil {
		he.Path = resp.Request.URL.Path // never the query, which may hold a key
	}
	return &upstreamError{
		he:    he,
		quota: eb.InsufficientQuota(),
		resp:  resp,
		body:  b,
	}
}

// upstreamError is a non-2xx answer of an upstream: classified through its
// *HTTPError, returned to the SDK as it was when the request was at fault.
type upstreamError struct {
	he    *errs.HTTPError
	quota bool
	resp  *http.Response
	body  []byte
}

func (e *upstreamError) Error() string           { return e.he.Error() }
func (e *upstreamError) Unwrap() error           { return e.he }
func (e *upstreamError) InsufficientQuota() bool { return e.quota }

// WithOrigin returns a copy of e whose HTTPError names scope and source,
// as the retry loop asks of the error that may end a call.
func (e *upstreamError) WithOrigin(scope, source string) error {
	c := *e
	if he, ok := e.he.WithOrigin(scope, source).(*errs.HTTPError); ok {
		c.he = he
	}
	return &c
}

// answer is the upstream's answer again, with its body re-readable.
func (e *upstreamError) answer(req *http.Request) *http.Response {
	r := *e.resp
	r.Header = e.resp.Header.Clone()
	r.Header.Del("Content-Length")
	r.Body = io.NopCloser(bytes.NewReader(e.body))
	r.ContentLength = int64(len(e.body))
	r.Request = req
	return &r
}

// governedBody is the body of a governed answer: the items read ahead, then
// the upstream's, holding the call's admission until the end or Close.
type governedBody struct {
	st  *retry.ItemStream[sdkhttp.Item]
	cur []byte
}

func (b *governedBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		it, err := b.st.Recv()
		if err != nil {
			return 0, err
		}
		b.cur = it.Raw
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *governedBody) Close() error { return b.st.Close() }

func itemUsage(it sdkhttp.Item) (transport.Usage, bool) {
	if it.Usage == nil {
		return transport.Usage{}, false
	}
	return *it.Usage, true
}

func isJSON(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func isEventStream(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// redactErr keeps a source's URL, whose query may hold credentials, out of
// an error: a *url.Error names the redacted URL instead.
func redactErr(err error, target string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *ue
		c.URL = config.RedactURL(target)
		return &c
	}
	return err
}
