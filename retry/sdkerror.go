package retry

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/provider"
)

// StatusError is implemented by an error that carries an upstream HTTP
// answer's status and headers. Classify reads it anywhere in an error's
// chain, so a client library's error type needs no mapping code: implement
// these two methods, or carry the answer in an exported field (see
// StatusOf).
type StatusError interface {
	error
	// HTTPStatus returns the upstream's HTTP status code.
	HTTPStatus() int
	// HTTPHeader returns the upstream answer's headers (nil when unknown).
	HTTPHeader() http.Header
}

// quotaError is implemented by errors that know whether the upstream said
// its quota or credit is spent (a lasting condition, unlike a rate limit).
type quotaError interface {
	InsufficientQuota() bool
}

// StatusOf finds the HTTP status and headers that err, or an error in its
// chain, carries:
//
//   - a StatusError;
//   - an exported field Response *http.Response that is set — the API
//     errors of github.com/openai/openai-go and
//     github.com/anthropics/anthropic-sdk-go are of this kind;
//   - an exported int field StatusCode or HTTPStatusCode that is not zero,
//     with the headers of an exported http.Header field Header when there is
//     one — github.com/sashabaranov/go-openai's APIError and RequestError
//     (which carry no headers, so their Retry-After is unknown).
//
// The fields are found by reflection once per error type. A *HTTPError of
// pgw is not read here: Classify handles it first. Classify judges an error
// whose status is 2xx (an error event of a stream, reported with the
// stream's status) by the type or code of its RawJSON body, as an error
// event is judged (provider.ErrorBody.Status); StatusOf returns the status
// as carried.
func StatusOf(err error) (status int, h http.Header, ok bool) {
	var found bool
	walk(err, func(e error) bool {
		if se, isSE := e.(StatusError); isSE {
			status, h, found = se.HTTPStatus(), se.HTTPHeader(), se.HTTPStatus() > 0
			return found
		}
		status, h, found = statusFields(e)
		return found
	})
	return status, h, found
}

// ResponseOf returns the *http.Response that an error in err's chain carries
// in an exported field Response, or nil.
func ResponseOf(err error) *http.Response {
	var resp *http.Response
	walk(err, func(e error) bool {
		v, ok := structOf(e)
		if !ok {
			return false
		}
		f := fieldsOf(v.Type())
		if f.response < 0 {
			return false
		}
		resp, _ = v.Field(f.response).Interface().(*http.Response)
		return resp != nil
	})
	return resp
}

// AsHTTPError describes an error that carries an upstream HTTP status
// (StatusOf) as a *transport.HTTPError: its status, its Retry-After read from the
// headers (every form provider.RetryAfter knows, relative to now), and its
// message — the provider's error body when the error exposes it through a
// RawJSON() string method (openai-go, anthropic-sdk-go), else the error's
// text — with key redacted. The result's chain holds both the description
// and err, so errors.As reaches the library's own type as before. It
// returns false when err already holds a *transport.HTTPError or no status.
//
// The result's Error is err's text with key redacted, and with it what the
// request behind err carried (sdkCredentials): an SDK's error text may show
// the request's URL and the answer's body (anthropic-sdk-go's does), either
// of which may echo a credential. err itself, which errors.As reaches, is
// unchanged: its fields and text are the SDK's, unredacted.
func AsHTTPError(err error, p config.Provider, key string, now time.Time) (error, bool) {
	var creds []string
	if key != "" {
		creds = []string{key}
	}
	return asHTTPError(err, p, creds, now)
}

// sealedSource holds a source (its API key, its BASE_URL with the query)
// for the code that redacts them, out of fmt's reach: a func value prints
// as an address under every verb, where fmt opens a pointer to a struct —
// for %v of the stream that holds it, and again in the %!s(…) a wrong verb
// prints — and shows its unexported fields raw.
type sealedSource func() config.Source

func seal(src config.Source) sealedSource { return func() config.Source { return src } }

// sourceHTTPError is AsHTTPError for an attempt of src: every one of its
// credentials (provider.Credentials) is redacted from the description and
// from the text. An SDK's error that carries no status (a transport error
// naming the request's URL, an error event of a stream) is returned as
// a redactedError when its text shows a credential; an error that holds an
// HTTPError already is not described, but its Message is redacted when it
// shows a credential (redactedMessageOf). ok is false when err needs
// nothing.
func sourceHTTPError(err error, src config.Source, now time.Time) (error, bool) {
	if err == nil {
		return nil, false
	}
	creds := provider.Credentials(src)
	var he HTTPStatusError // an HTTPError: described already, its Message perhaps not redacted
	if errors.As(err, &he) {
		return redactedMessageOf(err, he, creds)
	}
	if d, ok := asHTTPError(err, src.Provider, creds, now); ok {
		return d, true
	}
	return redactedOf(err, creds)
}

// asHTTPError is AsHTTPError redacting creds and what err's request
// carried.
func asHTTPError(err error, p config.Provider, creds []string, now time.Time) (error, bool) {
	if err == nil {
		return nil, false
	}
	var he HTTPStatusError // pgw's own HTTPError needs no description
	if errors.As(err, &he) {
		return nil, false
	}
	status, h, ok := StatusOf(err)
	if !ok {
		return nil, false
	}
	creds = sdkCredentials(err, creds)
	var body provider.ErrorBody
	var raw interface{ RawJSON() string }
	hasRaw := errors.As(err, &raw) && strings.TrimSpace(raw.RawJSON()) != ""
	var rawBody []byte
	if hasRaw {
		rawBody = []byte(raw.RawJSON())
	}
	status = answerStatus(p, status, rawBody)
	d := &errs.HTTPError{StatusCode: status}
	d.RetryAfter, _ = provider.ErrorRetryAfter(status, h, rawBody, now)
	if hasRaw {
		body = provider.ParseErrorRedacting(p, status, rawBody, creds)
		d.Message = provider.RedactAuthEcho(body.Text())
	} else {
		d.Message = provider.RedactAuthEcho(provider.ParseErrorRedacting(p, status, []byte(err.Error()), creds).Message)
	}
	return &describedError{desc: d, err: err, quota: body.InsufficientQuota(), creds: creds}, true
}

// describedError is an SDK error with pgw's description of it. Its text is
// the SDK's with creds redacted, built when first asked for: a retried
// attempt's error is seldom printed.
type describedError struct {
	desc  *errs.HTTPError
	err   error
	quota bool
	creds []string

	once sync.Once
	text string
}

// Error returns the SDK error's text without a credential (redactSDKText).
func (e *describedError) Error() string {
	e.once.Do(func() { e.text = redactSDKText(e.err, e.creds) })
	return e.text
}

func (e *describedError) Unwrap() []error         { return []error{e.desc, e.err} }
func (e *describedError) InsufficientQuota() bool { return e.quota }

// redactedError is an error without a status whose text showed a
// credential: the same error with that text redacted.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redactedSourceError returns err, an error of src that pgw hands on as it
// is (the Close of a stream), with what sourceHTTPError redacts redacted:
// src's credentials, what err's request carried, echoed credential headers,
// in its text and in its HTTPError's Message. errors.As still reaches err.
// err itself when it shows none.
func redactedSourceError(err error, src config.Source) error {
	if err == nil {
		return nil
	}
	creds := provider.Credentials(src)
	var d error
	var ok bool
	var he HTTPStatusError
	if errors.As(err, &he) {
		d, ok = redactedMessageOf(err, he, creds)
	} else {
		d, ok = redactedOf(err, creds)
	}
	if ok {
		return d
	}
	return err
}

// redactedPanic returns what pgw logs of a panic value p of an attempt of
// src: its text with src's credentials, what the request of a panic error
// carried, and echoed credential headers redacted.
func redactedPanic(p any, src config.Source) string {
	creds := provider.Credentials(src)
	if err, ok := p.(error); ok {
		creds = sdkCredentials(err, creds)
	}
	return provider.RedactText(fmt.Sprint(p), creds)
}

// redactedMessageOf redacts the Message of he, the HTTPError (pgw's, or
// any other pointer to a struct with a string field Message) in err's chain:
// a Call function or a custom transport that builds one itself may copy an
// SDK's or an upstream's text into it, credentials and all. When the Message
// shows one of creds, of what err's request carried (sdkCredentials) or an
// echoed credential header (provider.RedactText), the result is a copy of he
// with the Message redacted — err itself when he is err, else err with its
// text redacted, errors.As reaching the copy first. ok is false when the
// Message shows none: the error is returned as it is.
func redactedMessageOf(err error, he HTTPStatusError, creds []string) (error, bool) {
	v := reflect.ValueOf(he)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	if f, ok := v.Elem().Type().FieldByName("Message"); !ok || !f.IsExported() {
		return nil, false
	}
	msg := v.Elem().FieldByName("Message")
	if msg.Kind() != reflect.String || msg.String() == "" {
		return nil, false
	}
	creds = sdkCredentials(err, creds)
	red := provider.RedactText(msg.String(), creds)
	if red == msg.String() {
		return nil, false
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	cp.Elem().FieldByName("Message").SetString(red)
	d, ok := cp.Interface().(error)
	if !ok {
		return nil, false
	}
	if error(he) == err {
		return d, true
	}
	return &redactedHTTPError{desc: d, err: err, text: provider.RedactText(err.Error(), creds)}, true
}

// redactedHTTPError is an error whose chain holds an HTTPError with a
// credential in its Message: its text redacted, and the HTTPError's
// redacted copy desc found first by errors.As.
type redactedHTTPError struct {
	desc error
	err  error
	text string
}

func (e *redactedHTTPError) Error() string   { return e.text }
func (e *redactedHTTPError) Unwrap() []error { return []error{e.desc, e.err} }

// redactedOf returns err as a redactedError when its text shows one of
// creds or of what its request carried (sdkCredentials). An error that
// holds an HTTPError is left to redactedMessageOf.
func redactedOf(err error, creds []string) (error, bool) {
	var he HTTPStatusError
	if errors.As(err, &he) {
		return nil, false
	}
	text := err.Error()
	red := redactSDKText(err, sdkCredentials(err, creds))
	if red == text {
		return nil, false
	}
	return &redactedError{err: err, text: red}, true
}

// redactSDKText returns err's text with each of creds, and every echoed
// credential header's value (provider.RedactAuthEcho), redacted. The body
// an SDK's text shows (its RawJSON) is redacted as JSON first, so that a
// credential the upstream escaped there (\u0073k-…) is found too.
func redactSDKText(err error, creds []string) string {
	text := err.Error()
	var raw interface{ RawJSON() string }
	if errors.As(err, &raw) {
		if r := raw.RawJSON(); r != "" && strings.Contains(text, r) {
			text = strings.Replace(text, r, string(provider.RedactCredentials([]byte(r), creds)), 1)
		}
	}
	return provider.RedactText(text, creds)
}

// sdkCredentials returns creds with what the request behind err carried:
// the values of its credential headers (provider.HeaderCredentials) and
// the credentials of its URL (provider.URLCredentials), read from an
// exported field Request *http.Request, from the Request of a Response
// field, or from a *url.Error — the key an SDK was given and a query it
// added need not be the source's. Longer ones come first.
func sdkCredentials(err error, creds []string) []string {
	out := slices.Clone(creds)
	addRequest := func(req *http.Request) {
		if req == nil {
			return
		}
		out = append(out, provider.HeaderCredentials(req.Header)...)
		if req.URL != nil {
			out = append(out, provider.URLCredentials(req.URL.String())...)
		}
	}
	walk(err, func(e error) bool {
		if ue, ok := e.(*url.Error); ok {
			out = append(out, provider.URLCredentials(ue.URL)...)
			return false
		}
		v, ok := structOf(e)
		if !ok {
			return false
		}
		f := fieldsOf(v.Type())
		if f.request >= 0 {
			req, _ := v.Field(f.request).Interface().(*http.Request)
			addRequest(req)
		}
		if f.response >= 0 {
			if resp, _ := v.Field(f.response).Interface().(*http.Response); resp != nil {
				addRequest(resp.Request)
			}
		}
		return false
	})
	slices.Sort(out)
	return provider.SortCredentials(slices.Compact(out))
}

// answerStatus is the status an SDK error of status stands for, raw its
// error body when it keeps one. An error that carries a 2xx answer reports
// an error sent where the answer was due — anthropic-sdk-go's error for an
// error event in a stream carries the stream's 200 — and stands for the
// status of its type or code, as pgw's own transports class an error event
// (provider.ErrorBody.Status: rate_limit_error a 429, authentication_error
// a 401, overloaded_error a 529, anything unknown a 500). Other statuses are
// as they are.
func answerStatus(p config.Provider, status int, raw []byte) int {
	if status < 200 || status > 299 {
		return status
	}
	return provider.ParseError(p, status, raw, "").Status()
}

// classifyStatusError classifies errors that carry an HTTP status without a
// *transport.HTTPError, and errors that say the quota is spent.
func classifyStatusError(err error) (Class, bool) {
	var qe quotaError
	if errors.As(err, &qe) && qe.InsufficientQuota() {
		return Fatal, true
	}
	var he HTTPStatusError // pgw's own HTTPError: Classify reads it itself
	if errors.As(err, &he) {
		return 0, false
	}
	status, h, ok := StatusOf(err)
	if !ok {
		return 0, false
	}
	msg := err.Error()
	var rawBody []byte
	var raw interface{ RawJSON() string }
	if errors.As(err, &raw) {
		if provider.ParseError(config.ProviderOpenAI, status, []byte(raw.RawJSON()), "").InsufficientQuota() {
			return Fatal, true
		}
		rawBody = []byte(raw.RawJSON())
		msg += " " + raw.RawJSON()
	}
	status = answerStatus(config.ProviderOpenAI, status, rawBody)
	ra, _ := provider.ErrorRetryAfter(status, h, rawBody, time.Now())
	return classifyStatus(status, msg, ra > 0), true
}

// walk calls visit on err and every error in its chain (both Unwrap forms),
// depth first, until visit returns true.
func walk(err error, visit func(error) bool) bool {
	for depth := 0; err != nil && depth < 32; depth++ {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// statusFields reads an error's status fields.
func statusFields(e error) (int, http.Header, bool) {
	v, ok := structOf(e)
	if !ok {
		return 0, nil, false
	}
	f := fieldsOf(v.Type())
	if f.response >= 0 {
		if resp, _ := v.Field(f.response).Interface().(*http.Response); resp != nil && resp.StatusCode > 0 {
			return resp.StatusCode, resp.Header, true
		}
	}
	if f.status < 0 {
		return 0, nil, false
	}
	status := int(v.Field(f.status).Int())
	if status <= 0 {
		return 0, nil, false
	}
	var h http.Header
	if f.header >= 0 {
		h, _ = v.Field(f.header).Interface().(http.Header)
	}
	return status, h, true
}

func structOf(e error) (reflect.Value, bool) {
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, v.Kind() == reflect.Struct
}

// statusFieldSet is where an error type keeps its status, headers,
// response and request; -1 when it has no such field.
type statusFieldSet struct{ status, header, response, request int }

var fieldCache sync.Map // reflect.Type → statusFieldSet

var (
	responseType = reflect.TypeFor[*http.Response]()
	requestType  = reflect.TypeFor[*http.Request]()
	headerType   = reflect.TypeFor[http.Header]()
)

func fieldsOf(t reflect.Type) statusFieldSet {
	if f, ok := fieldCache.Load(t); ok {
		return f.(statusFieldSet)
	}
	f := statusFieldSet{status: -1, header: -1, response: -1, request: -1}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		switch {
		case sf.Name == "Response" && sf.Type == responseType:
			f.response = i
		case sf.Name == "Request" && sf.Type == requestType:
			f.request = i
		case (sf.Name == "StatusCode" || sf.Name == "HTTPStatusCode") && sf.Type.Kind() == reflect.Int && f.status < 0:
			f.status = i
		case sf.Name == "Header" && sf.Type == headerType:
			f.header = i
		}
	}
	fieldCache.Store(t, f)
	return f
}
