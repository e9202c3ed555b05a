package provider

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pgw-go/pgw/config"
)

// MaxErrorBody is how much of an error answer is worth reading: enough for
// any provider's error object, bounded against a proxy's HTML page.
const MaxErrorBody = 64 << 10

// maxMessage bounds ErrorBody.Message; longer upstream text is cut.
const maxMessage = 512

// Redacted replaces a credential wherever an upstream echoes it.
const Redacted = "[redacted]"

// ErrorBody is what an upstream's error answer says, read from its body.
type ErrorBody struct {
	// Message is the error's text, whitespace folded, cut to a few hundred
	// bytes, with the source's key (ParseSourceError: every credential)
	// redacted; the status text when the body says nothing (or, for an
	// error status, when it has no message).
	Message string
	// Type is the provider's error type ("invalid_request_error",
	// "overloaded_error", …), empty when absent; redacted and cut as Message is.
	Type string
	// Code is the provider's error code ("insufficient_quota", …), empty
	// when absent; redacted and cut as Message is.
	Code string
}

// spentQuotaCodes are the error codes and types that say the account's
// quota or credit is spent.
var spentQuotaCodes = []string{"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_too_low"}

// InsufficientQuota reports whether the error says the account's quota or
// credit is spent — a lasting condition, unlike a rate limit that passes.
func (e ErrorBody) InsufficientQuota() bool {
	return slices.Contains(spentQuotaCodes, e.Code) || slices.Contains(spentQuotaCodes, e.Type)
}

// NamesSpentQuota reports whether text (an error's message, in any case)
// names one of the codes or types InsufficientQuota knows: the test for an
// error that is only text, such as a *pgw.HTTPError a Call function built.
func NamesSpentQuota(text string) bool {
	t := strings.ToLower(text)
	for _, c := range spentQuotaCodes {
		if strings.Contains(t, c) {
			return true
		}
	}
	return false
}

// Status is the HTTP status the error's type or code stands for, for an
// error that came without a status of its own (an error event of a stream,
// an error object in a 2xx answer), so that it is classified like the same
// error sent as a status. OpenAI's codes come first: invalid_api_key 401
// (its type is invalid_request_error), rate_limit_exceeded 429; then
// Anthropic's types: invalid_request_error 400, authentication_error 401,
// billing_error 402, permission_error 403, not_found_error 404,
// request_too_large 413, rate_limit_error 429, overloaded_error 529; then a
// numeric code that is an HTTP error status (Gemini's {"code": 403,
// "status": "PERMISSION_DENIED"}) is that status. Anything else is a 500:
// the answer failed upstream after its headers said 200. It is the one
// table every transport and the http client class such an error by.
func (e ErrorBody) Status() int {
	switch e.Code {
	case "invalid_api_key":
		return http.StatusUnauthorized
	case "rate_limit_exceeded":
		return http.StatusTooManyRequests
	}
	if st, ok := e.typeStatus(); ok {
		return st
	}
	if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
		return n
	}
	return http.StatusInternalServerError
}

// typeStatus is the status of the error's type, ok false for a type the
// table does not know.
func (e ErrorBody) typeStatus() (int, bool) {
	switch e.Type {
	case "invalid_request_error":
		return http.StatusBadRequest, true
	case "authentication_error":
		return http.StatusUnauthorized, true
	case "billing_error":
		return http.StatusPaymentRequired, true
	case "permission_error":
		return http.StatusForbidden, true
	case "not_found_error":
		return http.StatusNotFound, true
	case "request_too_large":
		return http.StatusRequestEntityTooLarge, true
	case "rate_limit_error":
		return http.StatusTooManyRequests, true
	case "overloaded_error":
		return 529, true
	}
	return 0, false
}

// ParseError reads an error body in the format of p. OpenAI and Azure send
// {"error": {"message", "type", "code"}} (code a string or a number; some
// compatible servers send "error": "text"); Anthropic sends {"type":
// "error", "error": {"type", "message"}}. A body in neither form is used as
// text. key, when not empty, is redacted from the message, the type and the
// code.
func ParseError(p config.Provider, status int, body []byte, key string) ErrorBody {
	var secrets []string
	if key != "" {
		secrets = []string{key}
	}
	return parseError(p, status, body, secrets)
}

// ParseAnswerError reads the value of an "error" field that src sent where
// an answer was due — an error event of a stream, an error object in a 2xx
// answer — as ParseSourceError reads an error answer: an object of
// "message", "type" and "code", or the message itself. Its Message is empty
// when the upstream sent none (Text then names the code and the type);
// Status and InsufficientQuota class it as the same error sent as a status.
func ParseAnswerError(src config.Source, field []byte) ErrorBody {
	body := append(append([]byte(`{"error":`), field...), '}')
	creds := Credentials(src)
	e := parseError(src.Provider, http.StatusOK, body, creds)
	if e.Type == "" && e.Code == "" && e.Message == sanitize(string(body), creds) {
		// Nothing parsed: the value is all there is ({} says nothing).
		e.Message = sanitize(string(field), creds)
		if v := strings.Join(strings.Fields(e.Message), ""); v == "{}" || v == `""` {
			e.Message = ""
		}
	}
	return e
}

// HasAnswerError reports whether the value of an "error" field in a 2xx
// answer or an event reports an error: it is present and not null (the
// Responses API's success says "error": null).
func HasAnswerError(field []byte) bool {
	v := strings.TrimSpace(string(field))
	return v != "" && v != "null"
}

// ParseErrorRedacting is ParseError redacting each of creds (longest
// first, as Credentials orders them) from the message, the type and the
// code.
func ParseErrorRedacting(p config.Provider, status int, body []byte, creds []string) ErrorBody {
	return parseError(p, status, body, creds)
}

// ParseSourceError is ParseError for an answer of src: every one of src's
// Credentials is redacted from the message, the type and the code, so that
// an upstream that echoes the request (its URL, its headers) shows none of
// them.
func ParseSourceError(p config.Provider, src config.Source, status int, body []byte) ErrorBody {
	return parseError(p, status, body, Credentials(src))
}

// minQueryCredential is the shortest BASE_URL query value Credentials
// counts: shorter ones (flags, small numbers) would blot out ordinary text.
const minQueryCredential = 6

// Credentials returns what of src an upstream may echo and pgw must never
// print: its API key, and the credentials of its BASE_URL (URLCredentials).
// Longer ones come first.
func Credentials(src config.Source) []string {
	var out []string
	if k := src.APIKey.Reveal(); k != "" {
		out = append(out, k)
	}
	return SortCredentials(appendNew(out, URLCredentials(src.BaseURL)...))
}

// URLCredentials returns what of a URL may be a credential: the values of
// its query (as written and decoded; an entry without "=" is a value) —
// save api-version, which names a version, and values of fewer than six
// characters — and the password of its user info. It reads BASE_URL, and
// the URL of a request an SDK sent, by the same rules.
func URLCredentials(rawURL string) []string {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil
	}
	var out []string
	if pw, ok := u.User.Password(); ok && len(pw) >= minQueryCredential {
		_, shown, _ := strings.Cut(u.User.String(), ":") // as URL.String prints it
		out = appendNew(out, pw, shown)
	}
	if u.RawQuery == "" {
		return out
	}
	for _, pair := range strings.Split(u.RawQuery, "&") {
		k, raw, hasValue := strings.Cut(pair, "=")
		if !hasValue {
			raw = k // a bare token (?0123456789abcdef) is a value too
		}
		if name, err := url.QueryUnescape(k); err == nil && strings.EqualFold(name, "api-version") {
			continue
		}
		if len(raw) < minQueryCredential {
			continue
		}
		out = appendNew(out, raw)
		if dec, err := url.QueryUnescape(raw); err == nil && len(dec) >= minQueryCredential {
			out = appendNew(out, dec, url.QueryEscape(dec))
		}
	}
	return out
}

// SortCredentials orders creds longest first, the order every redaction
// replaces them in: a credential that holds another is replaced whole.
func SortCredentials(creds []string) []string {
	slices.SortStableFunc(creds, func(a, b string) int { return len(b) - len(a) })
	return creds
}

// appendNew appends each of vs that is not empty and not in out yet.
func appendNew(out []string, vs ...string) []string {
	for _, v := range vs {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func parseError(p config.Provider, status int, body []byte, secrets []string) ErrorBody {
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	var e ErrorBody
	if json.Unmarshal(body, &envelope) == nil && len(envelope.Error) > 0 {
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(envelope.Error, &obj) == nil {
			e.Message = strings.TrimSpace(obj.Message)
			e.Type = strings.TrimSpace(obj.Type)
			code := strings.Trim(strings.TrimSpace(string(obj.Code)), `"`)
			if code != "null" {
				e.Code = code
			}
		} else {
			var s string
			if json.Unmarshal(envelope.Error, &s) == nil {
				e.Message = s
			}
		}
	}
	if e.Message == "" && e.Type == "" && e.Code == "" && utf8.Valid(body) {
		e.Message = string(body)
	}
	e.Message = sanitize(e.Message, secrets)
	e.Type, e.Code = sanitize(e.Type, secrets), sanitize(e.Code, secrets) // an echo may land in either
	if e.Message == "" && e.Type == "" && e.Code == "" || e.Message == "" && status >= 300 {
		// A 2xx status's text ("OK") says nothing of an error: Text names
		// the code and the type instead.
		e.Message = http.StatusText(status)
	}
	_ = p // every known provider's body is one of the forms above
	return e
}

// Text renders the error as one line: the message, then the code (or the
// type) in parentheses when it adds something, so that a classifier that
// sees only the text can still tell "insufficient_quota" from a throttle.
// An error without a message is its code, then its type in parentheses
// ("invalid_api_key (invalid_request_error)"): what the upstream said.
func (e ErrorBody) Text() string {
	if e.Message == "" {
		switch {
		case e.Code != "" && e.Type != "" && e.Code != e.Type:
			return e.Code + " (" + e.Type + ")"
		case e.Code != "":
			return e.Code
		}
		return e.Type
	}
	tag := e.Code
	if tag == "" {
		tag = e.Type
	}
	if tag == "" || strings.Contains(e.Message, tag) {
		return e.Message
	}
	return e.Message + " (" + tag + ")"
}

// sanitize redacts secrets (the longer first) and every echoed credential
// header (RedactAuthEcho), folds whitespace (an HTML
// page becomes one line) and cuts the result to maxMessage bytes on a rune
// boundary.
func sanitize(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, Redacted)
	}
	msg = RedactAuthEcho(strings.Join(strings.Fields(msg), " "))
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
