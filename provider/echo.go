package provider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// credentialHeaders are the request headers that carry a credential, for
// any provider pgw knows and the proxies in front of them.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key"}

// HeaderCredentials returns the credentials a request's headers carry: the
// values of its credential headers (Authorization, Proxy-Authorization,
// api-key, x-api-key, x-goog-api-key) — of a value that names its scheme,
// the token ("Bearer sk-…" gives sk-…). Values of fewer than six
// characters are left out, as URLCredentials leaves them.
func HeaderCredentials(h http.Header) []string {
	var out []string
	for _, name := range credentialHeaders {
		for _, v := range h.Values(name) {
			v = strings.TrimSpace(v)
			if len(v) < minQueryCredential {
				continue
			}
			if _, tok, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(tok)) >= minQueryCredential {
				v = strings.TrimSpace(tok) // the scheme is no secret, and tells the reader what was sent
			}
			out = appendNew(out, v)
		}
	}
	return out
}

// authEchoes find a credential header's value echoed in text. The first:
// the header's name (or a query parameter's of the same meaning), a ':' or
// '=' with the quotes and JSON escapes around it (and the '[' of a list, as
// Go prints an http.Header), an optional scheme, and
// the value up to the next quote, space or delimiter. The second: a
// "Bearer <token>" standing alone, whose token is long enough not to be a
// word of the message ("invalid bearer token"). Group 1 of each is the
// value.
var authEchoes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:proxy-authorization|authorization|x-goog-api-key|x-api-key|api-key|api_key|apikey)(?:\\?["'])?\s*[:=]\s*\[?\s*(?:\\?["'])?\s*(?:(?:bearer|basic|token)\s+)?([^\s"'\\,;&}\]<>)]+)`),
	regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})`),
}

// RedactAuthEcho returns s with the value of every credential header it
// shows (authEchoes: "Authorization: Bearer sk-…", `"x-api-key":"sk-…"`,
// api_key=…) replaced by Redacted, the header's name and the scheme kept:
// an upstream or proxy that echoes a request's headers may show a key pgw
// does not know. A value already redacted is left as it is.
func RedactAuthEcho(s string) string {
	for _, re := range authEchoes {
		s = redactGroup(s, re)
	}
	return s
}

// redactGroup replaces group 1 of every match of re in s by Redacted.
func redactGroup(s string, re *regexp.Regexp) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		vStart, vEnd := m[2], m[3]
		if strings.HasPrefix(s[vStart:], Redacted[:len(Redacted)-1]) || vStart > 0 && strings.HasPrefix(s[vStart-1:], Redacted) {
			continue
		}
		b.WriteString(s[last:vStart])
		b.WriteString(Redacted)
		last = vEnd
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactText returns s with each of creds (longest first, as Credentials
// orders them) and every echoed credential header's value (RedactAuthEcho)
// replaced by Redacted.
func RedactText(s string, creds []string) string {
	return RedactAuthEcho(redactText(s, creds))
}

// echoNames are the names, lowercased, of the JSON members whose value is a
// credential: the credential headers (as a proxy echoes a request's headers
// as JSON) and the query parameters of the same meaning.
var echoNames = map[string]bool{
	"authorization": true, "proxy-authorization": true, "api-key": true, "x-api-key": true,
	"x-goog-api-key": true, "api_key": true, "apikey": true,
}

// echoHint finds what every match of authEchoes holds: a body without it
// is returned without being scanned.
var echoHint = regexp.MustCompile(`(?i)auth|key|bearer`)

// RedactAuthEchoBody returns b, an error answer's body, with the value of
// every credential header it echoes redacted, as RedactAuthEcho redacts
// text: an upstream or a proxy may echo a key pgw never knew (a proxy's
// own). A body that is JSON stays JSON, so that an SDK can still parse it:
// each string is redacted as decoded (escapes included), and the value of
// a member named as a credential header — "x-api-key": "…", a number, or
// the strings of an array ("Authorization": ["Bearer …"], as Go encodes an
// http.Header) — becomes "[redacted]", the scheme kept. A body that opens as
// JSON but is cut is read the same way. Any other text is redacted as
// RedactAuthEcho does. b is returned as it is when it echoes nothing, and
// is never modified.
func RedactAuthEchoBody(b []byte) []byte {
	if !echoHint.Match(b) {
		return b
	}
	if looksJSON(b) {
		return echoJSON(b)
	}
	if s := RedactAuthEcho(string(b)); s != string(b) {
		return []byte(s)
	}
	return b
}

// echoJSON is RedactAuthEchoBody for JSON text b.
func echoJSON(b []byte) []byte {
	var out []byte // nil until something is redacted
	last := 0      // b[last:] is not yet copied to out
	replace := func(start, end int, with []byte) {
		out = append(append(out, b[last:start]...), with...)
		last = end
	}
	pending := false // the next value is a credential member's
	arr := -1        // depth of the credential member's array whose elements are redacted
	depth := 0
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			end, closed := stringEnd(b, i)
			s, ok := decodeJSONString(b[i:end], closed)
			isKey := closed && followedByColon(b, end)
			switch {
			case !ok:
			case isKey:
				pending = echoNames[strings.ToLower(s)]
			case pending || arr == depth:
				if r := redactEchoValue(s); r != s {
					replace(i, end, encodeJSONString(r, closed))
				}
			default:
				if r := RedactAuthEcho(s); r != s {
					replace(i, end, encodeJSONString(r, closed))
				}
			}
			if !isKey {
				pending = false
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(b) && strings.IndexByte("0123456789+-.eE", b[end]) >= 0 {
				end++
			}
			if pending || arr == depth {
				replace(i, end, appendJSONString(nil, Redacted))
			}
			pending = false
			i = end
		case c == '[' || c == '{':
			depth++
			if c == '[' && pending {
				arr = depth
			}
			pending = false
			i++
		case c == ']' || c == '}':
			if depth == arr {
				arr = -1
			}
			depth--
			pending = false
			i++
		case c == ':' || c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		default: // true, false, null
			pending = false
			i++
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// redactEchoValue returns the value of a credential member redacted, its
// scheme kept ("Bearer [redacted]"); an empty value, or one redacted
// already, as it is.
func redactEchoValue(s string) string {
	v := strings.TrimSpace(s)
	if v == "" || strings.Contains(v, Redacted) {
		return s
	}
	if scheme, tok, ok := strings.Cut(v, " "); ok && strings.TrimSpace(tok) != "" {
		return scheme + " " + Redacted
	}
	return Redacted
}

// decodeJSONString returns the text of the JSON string raw (quotes
// included; the closing one missing unless closed); false when it is not a
// valid string.
func decodeJSONString(raw []byte, closed bool) (string, bool) {
	if !closed {
		raw = append(append([]byte(nil), raw...), '"')
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// encodeJSONString encodes s as a JSON string, left open unless closed.
func encodeJSONString(s string, closed bool) []byte {
	out := appendJSONString(nil, s)
	if !closed {
		out = out[:len(out)-1]
	}
	return out
}

// followedByColon reports whether the first byte of b from i on that is
// not white space is a colon: the string before i is a member's name.
func followedByColon(b []byte, i int) bool {
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}
