package config

import (
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Source is one upstream of a scope (the {SCOPE}__{SOURCE}__… keys). The root
// package re-exports it as pgw.Source. A zero field means its default; see
// WithDefaults. Printing a Source never shows its API key.
type Source struct {
	// Name is the name as written in {SCOPE}__SOURCES, e.g. "eu-1". Its
	// keys use Key(Name): "CHAT__EU_1__BASE_URL".
	Name string
	// BaseURL is the upstream's absolute http(s) URL, e.g.
	// "https://api.example.com/v1". The default transports need it; a custom
	// Call function may not.
	BaseURL string
	// APIKey is the upstream credential; empty means none is sent.
	APIKey Secret
	// Model is the model name sent upstream; empty means the transport's
	// choice.
	Model string
	// Timeout bounds one attempt on this source (default 60 s).
	Timeout time.Duration
	// RPM, TPM and MaxInFlight are the source's quotas: requests and tokens
	// per minute, calls at once. 0 means unlimited.
	RPM, TPM, MaxInFlight int
	// Weight is the source's share of picks among sources of the same
	// Priority (default 1).
	Weight int
	// Priority orders sources into tiers: a lower value is tried first, and a
	// tier is used only when every source of the tiers before it is
	// rejected or has already failed the call. Default 0; negative values
	// are allowed.
	Priority int
	// BatchSize is the most inputs one embedding request may carry; larger
	// inputs are split. 0 means no split.
	BatchSize int
	// MaxTokens bounds the answers of chat requests that set no MaxTokens
	// of their own, and of OCR requests; 0 means the provider's default (for Anthropic, which
	// requires a bound, the transport's documented default).
	MaxTokens int
	// Provider is the API family the source speaks (default
	// ProviderOpenAI): its credential header, error and rate-limit formats
	// and default transport.
	Provider Provider
	// LimitsFromHeaders lets the limits the upstream advertises in its
	// rate-limit headers replace RPM and TPM: the quota gate then enforces
	// only MaxInFlight for the source, and the advertised budget the rest
	// ({SCOPE}__{SOURCE}__LIMITS_FROM_HEADERS, default false). RPM and TPM,
	// when set, are still shown beside the advertised limits.
	LimitsFromHeaders bool
	// Organization and Project name the OpenAI organization and project a
	// request to an openai source counts against (its OpenAI-Organization
	// and OpenAI-Project headers; {SCOPE}__{SOURCE}__ORGANIZATION and
	// __PROJECT). Empty sends none of pgw's own; an SDK's header then
	// passes through the governed http.Client unchanged. Only a source
	// with PROVIDER openai may set them.
	Organization, Project string
}

// Key returns the form of a source name used in environment keys: upper-case,
// '-' turned into '_' ("eu-1" → "EU_1").
func Key(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// WithDefaults returns s with every zero field replaced by its default.
func (s Source) WithDefaults() Source {
	if s.Timeout == 0 {
		s.Timeout = DefaultSourceTimeout
	}
	if s.Weight == 0 {
		s.Weight = DefaultWeight
	}
	if s.Provider == "" {
		s.Provider = DefaultProvider
	}
	return s
}

// Limits returns the source's quotas for a gate.QuotaGate.
func (s Source) Limits() gate.Limits {
	return gate.Limits{RPM: s.RPM, TPM: s.TPM, MaxInFlight: s.MaxInFlight}
}

// EnforcedLimits returns the quotas the quota gate enforces: Limits, without
// RPM and TPM when LimitsFromHeaders lets the advertised limits replace
// them.
func (s Source) EnforcedLimits() gate.Limits {
	l := s.Limits()
	if s.LimitsFromHeaders {
		l.RPM, l.TPM = 0, 0
	}
	return l
}
