package config

import (
	"net/url"
	"strings"
)

// Provider names the API family a source speaks ({SCOPE}__{SOURCE}__PROVIDER).
// It selects the credential header, how error bodies and rate-limit headers
// are read, the BASE_URL convention and the default typed transport.
type Provider string

// The providers pgw knows. The zero value means ProviderOpenAI.
const (
	// ProviderOpenAI is the OpenAI API and every server compatible with it:
	// "Authorization: Bearer <key>"; BASE_URL includes the version path,
	// e.g. https://api.openai.com/v1.
	ProviderOpenAI Provider = "openai"
	// ProviderAzure is Azure OpenAI: "api-key: <key>"; BASE_URL is the
	// deployment's URL with its api-version query, e.g.
	// https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=2024-10-21.
	ProviderAzure Provider = "azure"
	// ProviderAnthropic is Anthropic's Messages API: "x-api-key: <key>" and
	// "anthropic-version"; BASE_URL includes the version path, e.g.
	// https://api.anthropic.com/v1.
	ProviderAnthropic Provider = "anthropic"
)

// DefaultProvider is the provider of a source that names none.
const DefaultProvider = ProviderOpenAI

// URL returns the address of path on this source: path is joined onto the
// path of BaseURL (one '/' between them) and BaseURL's query, such as Azure's
// api-version, is kept. A path that carries its own query has it merged
// after BaseURL's. It returns "" when BaseURL does not parse.
//
// The result may hold credentials in its query: print RedactURL(result), not
// the result itself.
func (s Source) URL(path string) string {
	return JoinURL(s.BaseURL, path)
}

// JoinURL joins path (which may carry a query) onto base's path, keeping
// base's query. path is taken as written in a URL, percent-escapes
// included ("files/a%20b" stays "files/a%20b", not "files/a%2520b"), and
// the escapes of base's own path are kept. It returns "" when base does not
// parse.
func JoinURL(base, path string) string {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return ""
	}
	p, q, _ := strings.Cut(path, "?")
	joined := strings.TrimRight(u.EscapedPath(), "/") + "/" + strings.TrimLeft(p, "/")
	if dec, err := url.PathUnescape(joined); err == nil {
		u.Path, u.RawPath = dec, joined
	} else {
		// Not a valid escaped path: take it as plain text.
		u.Path, u.RawPath = joined, ""
	}
	if q != "" {
		if u.RawQuery != "" {
			u.RawQuery += "&" + q
		} else {
			u.RawQuery = q
		}
	}
	return u.String()
}

// RedactURL shows a URL without its user info and query, which may hold
// credentials; text that does not parse and holds an '@' or '?' is hidden
// whole. Use it wherever a source's URL is printed.
func RedactURL(raw string) string { return redactURL(raw) }

// RedactedBaseURL is BaseURL as it may be printed: no user info, no query.
func (s Source) RedactedBaseURL() string { return redactURL(s.BaseURL) }
