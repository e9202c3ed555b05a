package provider

import (
	"net/http"

	"github.com/pgw-go/pgw/config"
)

// AnthropicVersion is the anthropic-version header sent to Anthropic sources
// when the request does not carry one.
const AnthropicVersion = "2023-06-01"

// SetAuth sets the credential header of p on h, replacing any credential
// header that h already carries for any provider, so that a request built
// for one source never leaks another's key. An empty key removes them all.
//
//   - openai (and the zero value): Authorization: Bearer <key>
//   - azure: api-key: <key>
//   - anthropic: x-api-key: <key>, plus anthropic-version when absent
func SetAuth(h http.Header, p config.Provider, key string) {
	DropAuth(h)
	if p == config.ProviderAnthropic && h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", AnthropicVersion)
	}
	if key == "" {
		return
	}
	switch p {
	case config.ProviderAzure:
		h.Set("Api-Key", key)
	case config.ProviderAnthropic:
		h.Set("X-Api-Key", key)
	default:
		h.Set("Authorization", "Bearer "+key)
	}
}

// DropAuth removes from h the credential header of every provider:
// Authorization, api-key and x-api-key.
func DropAuth(h http.Header) {
	h.Del("Authorization")
	h.Del("Api-Key")
	h.Del("X-Api-Key")
}

// The headers that name the OpenAI organization and project a request
// counts against (openai-go's option.WithOrganization and WithProject, the
// OPENAI_ORG_ID and OPENAI_PROJECT_ID of OpenAI's SDKs).
const (
	HeaderOrganization = "OpenAI-Organization"
	HeaderProject      = "OpenAI-Project"
)

// SetAccount makes h's account headers src's. For an openai source, its
// ORGANIZATION and PROJECT, when set, replace whatever h carries (a request
// an SDK built for another account); when unset, h keeps its own. Any other
// provider gets neither: they name an OpenAI account, which an Azure or
// Anthropic source has no use for and should not be told.
func SetAccount(h http.Header, src config.Source) {
	if src.Provider != config.ProviderOpenAI && src.Provider != "" {
		h.Del(HeaderOrganization)
		h.Del(HeaderProject)
		return
	}
	if src.Organization != "" {
		h.Set(HeaderOrganization, src.Organization)
	}
	if src.Project != "" {
		h.Set(HeaderProject, src.Project)
	}
}
