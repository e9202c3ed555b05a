package config

import (
	"slices"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// ScopeSettings is one scope's sources and policy (the {SCOPE}__… keys). A
// zero field means its default; see WithDefaults.
type ScopeSettings struct {
	// Name is the scope's name as in PGW_SCOPES: upper-case letters, digits
	// and single underscores, e.g. "CHAT".
	Name string
	// Sources are the scope's upstreams, in the order of {SCOPE}__SOURCES.
	// Admission tries them by Priority first (see Source.Priority).
	Sources []Source
	// QuotaFull is what a call does when every source is rejected and at
	// least one for quota (default wait).
	QuotaFull Mode
	// CircuitOpen is what a call does when every source is rejected by its
	// breaker (default fail_fast: waiting on open breakers is opt-in).
	CircuitOpen Mode
	// MaxAttempts bounds the attempts of one call (default 3 × sources).
	MaxAttempts int
	// StallWindow bounds the time a call spends not attempting (default
	// 300 s).
	StallWindow time.Duration
	// PollInterval is the base of the nap between admission rounds (default
	// 50 ms).
	PollInterval time.Duration
	// FailureThreshold is the breaker's consecutive failures to trip
	// (default 5).
	FailureThreshold int
	// Cooldown is the breaker's first open phase (default 60 s).
	Cooldown time.Duration
	// MaxCooldown caps the grown cooldown (default max(600 s, Cooldown)).
	MaxCooldown time.Duration
	// ProbeTTL is the probe lease length (default
	// gate.DefaultProbeTTL(Cooldown, slowest source Timeout), at most
	// 10⁷ s).
	ProbeTTL time.Duration
	// Balance picks the first source within a priority tier: weighted
	// (default) or latency ({SCOPE}__BALANCE).
	Balance Balance
	// HedgeAfter is the fixed hedge delay: a call whose attempt has not
	// delivered its first chunk (or answer) after it starts a second
	// attempt on another source ({SCOPE}__HEDGE_AFTER_S); 0 = none.
	HedgeAfter time.Duration
	// HedgeQuantile makes the hedge delay adaptive: this quantile (0.9 for
	// HEDGE_AFTER=p90) of the first attempt's source's recent times to
	// first chunk; 0 = none. Until a source has 20 samples, HedgeAfter
	// stands in (no hedge when it is 0).
	HedgeQuantile float64
	// HedgeBudget is the share of calls that may hedge, kept by a token
	// bucket (default 0.1; {SCOPE}__HEDGE_BUDGET).
	HedgeBudget float64
	// HedgeMax is how many hedges one call may start (default 1;
	// {SCOPE}__HEDGE_MAX).
	HedgeMax int
}

// WithDefaults returns a deep copy of s with every zero field, its sources'
// included, replaced by its default. It does not validate.
func (s ScopeSettings) WithDefaults() ScopeSettings {
	s.Sources = slices.Clone(s.Sources)
	var slowest time.Duration
	for i := range s.Sources {
		s.Sources[i] = s.Sources[i].WithDefaults()
		slowest = max(slowest, s.Sources[i].Timeout)
	}
	if s.QuotaFull == "" {
		s.QuotaFull = DefaultQuotaFull
	}
	if s.CircuitOpen == "" {
		s.CircuitOpen = DefaultCircuitOpen
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = DefaultAttemptsPerSource * max(len(s.Sources), 1)
	}
	if s.StallWindow == 0 {
		s.StallWindow = DefaultStallWindow
	}
	if s.PollInterval == 0 {
		s.PollInterval = DefaultPollInterval
	}
	if s.FailureThreshold == 0 {
		s.FailureThreshold = defaultPolicy.ConsecutiveFailures
	}
	if s.Cooldown == 0 {
		s.Cooldown = defaultPolicy.Cooldown
	}
	if s.MaxCooldown == 0 {
		s.MaxCooldown = max(defaultPolicy.MaxCooldown, s.Cooldown)
	}
	if s.ProbeTTL == 0 {
		// Capped so that a huge but legal timeout cannot make a default
		// fail validation.
		s.ProbeTTL = min(gate.DefaultProbeTTL(s.Cooldown, slowest), maxDuration)
	}
	s.hedgeDefaults()
	return s
}

// Policy returns the breaker policy of the scope, with its defaults applied:
// FailureThreshold, Cooldown, MaxCooldown and ProbeTTL come from the scope;
// the other fields are zero, i.e. gate's defaults.
func (s ScopeSettings) Policy() gate.Policy {
	s = s.WithDefaults()
	return gate.Policy{
		ConsecutiveFailures: s.FailureThreshold,
		Cooldown:            s.Cooldown,
		MaxCooldown:         s.MaxCooldown,
		ProbeTTL:            s.ProbeTTL,
	}
}

// Source returns the scope's source called name (as written in
// {SCOPE}__SOURCES), and whether it exists.
func (s ScopeSettings) Source(name string) (Source, bool) {
	for _, src := range s.Sources {
		if src.Name == name {
			return src, true
		}
	}
	return Source{}, false
}
