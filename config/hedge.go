package config

import (
	"math"
	"strconv"
	"strings"
)

// Balance is how admission picks the first source to try within a priority
// tier ({SCOPE}__BALANCE).
type Balance string

// The legal Balance values.
const (
	// BalanceWeighted draws by weight alone (the default).
	BalanceWeighted Balance = "weighted"
	// BalanceLatency draws two sources by weight and tries first the one
	// with the lower peak-EWMA latency times attempts in flight.
	BalanceLatency Balance = "latency"
)

// Defaults of the balancing and hedging keys.
const (
	DefaultBalance = BalanceWeighted
	// DefaultHedgeBudget is the share of a scope's calls that may hedge.
	DefaultHedgeBudget = 0.1
	// DefaultHedgeMax is how many hedges one call may start.
	DefaultHedgeMax = 1
	// MaxHedgeMax bounds HEDGE_MAX.
	MaxHedgeMax = 4
)

// Bounds of HEDGE_AFTER's percentile.
const (
	minHedgePercentile = 50.0
	maxHedgePercentile = 99.9
)

// HedgeEnabled reports whether the scope hedges: HEDGE_AFTER_S or
// HEDGE_AFTER is set.
func (s ScopeSettings) HedgeEnabled() bool {
	return s.HedgeAfter > 0 || s.HedgeQuantile > 0
}

var hedgeFields = []field[ScopeSettings]{
	enumField("BALANCE", func(s *ScopeSettings) *Balance { return &s.Balance }, BalanceWeighted, BalanceLatency),
	{
		suffix: "HEDGE_AFTER_S",
		legal:  "seconds (fractions allowed) in [0.001, 10000000]; unset or 0 = no fixed hedge delay",
		load: func(s *ScopeSettings, raw string) bool {
			if strings.TrimSpace(raw) == "0" {
				s.HedgeAfter = 0
				return true
			}
			d, ok := parseSeconds(raw)
			if ok {
				s.HedgeAfter = d
			}
			return ok
		},
		check: func(s *ScopeSettings) (string, bool) {
			d := s.HedgeAfter
			return formatSeconds(d), d == 0 || d >= minDuration && d <= maxDuration
		},
	},
	{
		suffix: "HEDGE_AFTER",
		legal:  "pNN, a percentile in [50, 99.9] of the source's observed time to first chunk (e.g. p90); unset = no adaptive hedge delay",
		load: func(s *ScopeSettings, raw string) bool {
			q, ok := parsePercentile(raw)
			if ok {
				s.HedgeQuantile = q
			}
			return ok
		},
		check: func(s *ScopeSettings) (string, bool) {
			q := s.HedgeQuantile
			return FormatPercentile(q), q == 0 || validPercentile(q*100)
		},
	},
	{
		suffix: "HEDGE_BUDGET",
		legal:  "a share of calls in (0, 1], e.g. 0.1 for at most one hedge per ten calls",
		load: func(s *ScopeSettings, raw string) bool {
			f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
			if err != nil || !(f > 0 && f <= 1) {
				return false
			}
			s.HedgeBudget = f
			return true
		},
		check: func(s *ScopeSettings) (string, bool) {
			f := s.HedgeBudget
			return strconv.FormatFloat(f, 'f', -1, 64), f > 0 && f <= 1
		},
	},
	intField("HEDGE_MAX", func(s *ScopeSettings) *int { return &s.HedgeMax }, 1, MaxHedgeMax, "; hedges one call may start"),
}

// parsePercentile reads "p90" or "p99.5" as a quantile (0.9, 0.995).
func parsePercentile(raw string) (float64, bool) {
	raw = strings.TrimSpace(raw)
	if len(raw) < 2 || (raw[0] != 'p' && raw[0] != 'P') {
		return 0, false
	}
	p, err := strconv.ParseFloat(raw[1:], 64)
	if err != nil || !validPercentile(p) {
		return 0, false
	}
	return p / 100, true
}

func validPercentile(p float64) bool {
	return !math.IsNaN(p) && p >= minHedgePercentile && p <= maxHedgePercentile
}

// FormatPercentile writes a quantile as HEDGE_AFTER does: 0.9 → "p90"; 0
// → "".
func FormatPercentile(q float64) string {
	if q == 0 {
		return ""
	}
	return "p" + strconv.FormatFloat(math.Round(q*1e5)/1e3, 'f', -1, 64)
}

// hedgeDefaults fills the zero balancing and hedging fields of s.
func (s *ScopeSettings) hedgeDefaults() {
	if s.Balance == "" {
		s.Balance = DefaultBalance
	}
	if s.HedgeBudget == 0 {
		s.HedgeBudget = DefaultHedgeBudget
	}
	if s.HedgeMax == 0 {
		s.HedgeMax = DefaultHedgeMax
	}
}
