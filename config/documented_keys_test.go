package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

// The keys whose documented default or legal values once differed from what
// FromMap does, pinned through FromMap: the parsed setting for every legal
// value the documentation names, and for a bad value one problem naming the
// key and its legal values.

func TestProviderKeyAsDocumented(t *testing.T) {
	const key = "CHAT__A__PROVIDER"
	assert.Equal(t, config.ProviderOpenAI, src0(mustLoad(t, base())).Provider, "default openai")
	for raw, want := range map[string]config.Provider{
		"openai": config.ProviderOpenAI, "azure": config.ProviderAzure, "anthropic": config.ProviderAnthropic,
	} {
		assert.Equal(t, want, src0(mustLoad(t, base(key, raw))).Provider, raw)
	}
	for _, raw := range []string{"", "OpenAI", "gemini", "anthropic-v1"} {
		ce := mustFail(t, base(key, raw))
		require.Equal(t, []string{key}, keys(ce), "value %q", raw)
		assert.Equal(t, "openai, azure, anthropic", problem(t, ce, key).Legal)
	}
}

func TestLimitsFromHeadersKeyAsDocumented(t *testing.T) {
	const key = "CHAT__A__LIMITS_FROM_HEADERS"
	assert.False(t, src0(mustLoad(t, base())).LimitsFromHeaders, "default false")
	for raw, want := range map[string]bool{"true": true, "false": false, "TRUE": true, "False": false} {
		assert.Equal(t, want, src0(mustLoad(t, base(key, raw))).LimitsFromHeaders, "%q: true and false in any case", raw)
	}
	for _, raw := range []string{"", "1", "yes", "on"} {
		ce := mustFail(t, base(key, raw))
		require.Equal(t, []string{key}, keys(ce), "value %q", raw)
		assert.Equal(t, "true, false", problem(t, ce, key).Legal)
	}
}

func TestHedgeAfterKeysAsDocumented(t *testing.T) {
	assert.Zero(t, scope0(mustLoad(t, base("CHAT__HEDGE_AFTER_S", "0"))).HedgeAfter, "0 = no fixed hedge delay")
	assert.Equal(t, 250*time.Millisecond, scope0(mustLoad(t, base("CHAT__HEDGE_AFTER_S", "0.25"))).HedgeAfter)
	for _, raw := range []string{"p90", "P90"} {
		assert.InDelta(t, 0.9, scope0(mustLoad(t, base("CHAT__HEDGE_AFTER", raw))).HedgeQuantile, 1e-9, raw)
	}
	ce := mustFail(t, base("CHAT__HEDGE_AFTER", "90"))
	require.Equal(t, []string{"CHAT__HEDGE_AFTER"}, keys(ce))
	assert.Contains(t, problem(t, ce, "CHAT__HEDGE_AFTER").Legal, "pNN, a percentile in [50, 99.9]")
}

// RPM and TPM name the same legal set whatever the bad value: text that is
// no integer, a negative, and a rate the quota gates cannot count exactly.
func TestRateKeysNameTheirWholeLegalSet(t *testing.T) {
	const legal = "0 for unlimited, 1..18764998, or a multiple of 1000 up to 2147483000; other values cannot be counted exactly"
	for _, key := range []string{"CHAT__A__RPM", "CHAT__A__TPM"} {
		for raw, want := range map[string]int{"0": 0, "18764998": 18764998, "2147483000": 2147483000} {
			s := mustLoad(t, base(key, raw))
			got := src0(s).RPM
			if key == "CHAT__A__TPM" {
				got = src0(s).TPM
			}
			assert.Equal(t, want, got, "%s=%s", key, raw)
		}
		for _, raw := range []string{"abc", "-1", "1.5", "18764999", "2147483647", "2147483648"} {
			ce := mustFail(t, base(key, raw))
			require.Equal(t, []string{key}, keys(ce), "%s=%s", key, raw)
			assert.Equal(t, legal, problem(t, ce, key).Legal, "%s=%s", key, raw)
		}
	}
}
