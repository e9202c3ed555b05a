package config_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

func TestHedgeKeysDefaultToOff(t *testing.T) {
	sc := mustLoad(t, base()).Scopes[0]
	assert.Equal(t, config.BalanceWeighted, sc.Balance)
	assert.False(t, sc.HedgeEnabled())
	assert.Zero(t, sc.HedgeAfter)
	assert.Zero(t, sc.HedgeQuantile)
	assert.Equal(t, 0.1, sc.HedgeBudget)
	assert.Equal(t, 1, sc.HedgeMax)
}

func TestHedgeKeysLoad(t *testing.T) {
	sc := mustLoad(t, base("CHAT__BALANCE", "latency", "CHAT__HEDGE_AFTER_S", "0.25",
		"CHAT__HEDGE_AFTER", "p99.5", "CHAT__HEDGE_BUDGET", "0.05", "CHAT__HEDGE_MAX", "2")).Scopes[0]
	assert.Equal(t, config.BalanceLatency, sc.Balance)
	assert.Equal(t, 250*time.Millisecond, sc.HedgeAfter)
	assert.InDelta(t, 0.995, sc.HedgeQuantile, 1e-12)
	assert.Equal(t, "p99.5", config.FormatPercentile(sc.HedgeQuantile))
	assert.Equal(t, 0.05, sc.HedgeBudget)
	assert.Equal(t, 2, sc.HedgeMax)
	assert.True(t, sc.HedgeEnabled())
	assert.True(t, mustLoad(t, base("CHAT__HEDGE_AFTER", "P90")).Scopes[0].HedgeEnabled())
	assert.False(t, mustLoad(t, base("CHAT__HEDGE_AFTER_S", "0")).Scopes[0].HedgeEnabled())
}

func TestHedgeKeysRejectBadValues(t *testing.T) {
	for key, raw := range map[string]string{
		"CHAT__BALANCE":       "fastest",
		"CHAT__HEDGE_AFTER_S": "-1",
		"CHAT__HEDGE_AFTER":   "90",
		"CHAT__HEDGE_BUDGET":  "1.5",
		"CHAT__HEDGE_MAX":     "9",
	} {
		err := mustFail(t, base(key, raw))
		assert.Contains(t, err.Error(), key, raw)
	}
	err := mustFail(t, base("CHAT__HEDGE_AFTER", "p20"))
	assert.Contains(t, err.Error(), "pNN, a percentile in [50, 99.9]")
}

func TestHedgeSettingsInCodeAreValidated(t *testing.T) {
	s := config.Settings{Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{{Name: "a"}},
		Balance: "x", HedgeQuantile: 0.2, HedgeBudget: 2}}}
	err := s.Validate()
	assert.ErrorContains(t, err, "CHAT__BALANCE")
	assert.ErrorContains(t, err, "CHAT__HEDGE_AFTER")
	assert.ErrorContains(t, err, "CHAT__HEDGE_BUDGET")
}

// Hedge settings built in code, outside their legal ranges (NaN included),
// are each named with what is legal.
func TestHedgeSettingsInCodeOutOfRangeNameWhatIsLegal(t *testing.T) {
	for want, sc := range map[string]config.ScopeSettings{
		`CHAT__HEDGE_MAX="9" (legal: integer in [1, 4]`:      {HedgeMax: 9},
		`CHAT__HEDGE_MAX="-1" (legal: integer in [1, 4]`:     {HedgeMax: -1},
		`CHAT__HEDGE_AFTER_S="-1" (legal: seconds`:           {HedgeAfter: -time.Second},
		`CHAT__HEDGE_AFTER="pNaN" (legal: pNN`:               {HedgeQuantile: math.NaN()},
		`CHAT__HEDGE_AFTER="p100" (legal: pNN`:               {HedgeQuantile: 1},
		`CHAT__HEDGE_BUDGET="NaN" (legal: a share of calls`:  {HedgeBudget: math.NaN()},
		`CHAT__HEDGE_BUDGET="+Inf" (legal: a share of calls`: {HedgeBudget: math.Inf(1)},
		`CHAT__HEDGE_BUDGET="-Inf" (legal: a share of calls`: {HedgeBudget: math.Inf(-1)},
		`CHAT__HEDGE_AFTER="p+Inf" (legal: pNN`:              {HedgeQuantile: math.Inf(1)},
		`CHAT__HEDGE_AFTER="p-Inf" (legal: pNN`:              {HedgeQuantile: math.Inf(-1)},
	} {
		sc.Name = "CHAT"
		sc.Sources = []config.Source{{Name: "a", BaseURL: "http://up.example"}}
		err := (&config.Settings{Scopes: []config.ScopeSettings{sc}}).Validate()
		assert.ErrorContains(t, err, want)
	}
}

// The same through the environment: an infinite or overflowing float is
// refused and named with what is legal, as NaN is.
func TestHedgeFloatsFromTheEnvironmentRefuseInfinities(t *testing.T) {
	for key, raws := range map[string][]string{
		"CHAT__HEDGE_BUDGET":  {"Inf", "+Inf", "-Inf", "infinity", "1e309", "NaN"},
		"CHAT__HEDGE_AFTER":   {"pInf", "p+Inf", "p-Inf", "p1e309", "pNaN"},
		"CHAT__HEDGE_AFTER_S": {"Inf", "+Inf", "-Inf", "1e309", "NaN"},
	} {
		for _, raw := range raws {
			ce := mustFail(t, base(key, raw))
			require.Equal(t, []string{key}, keys(ce), "%s=%s", key, raw)
			p := problem(t, ce, key)
			assert.Equal(t, raw, p.Value)
			assert.NotEmpty(t, p.Legal)
		}
	}
}
