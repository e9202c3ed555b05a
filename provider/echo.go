package provider

import (
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
// '=' with the quotes and JSON escapes around it, an optional scheme, and
// the value up to the next quote, space or delimiter. The second: a
// "Bearer <token>" standing alone, whose token is long enough not to be a
// word of the message ("invalid bearer token"). Group 1 of each is the
// value.
var authEchoes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:proxy-authorization|authorization|x-goog-api-key|x-api-key|api-key|api_key|apikey)(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?\s*(?:(?:bearer|basic|token)\s+)?([^\s"'\\,;&}\]<>)]+)`),
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
		if strings.HasPrefix(s[vStart:], Redacted[:len(Redacted)-1]) {
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
