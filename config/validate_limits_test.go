package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

// A rate the quota gates cannot count exactly is a ConfigError from config,
// not a later failure of the gateway.
func TestRatesTheQuotaGatesCannotCountAreConfigProblems(t *testing.T) {
	_, err := config.FromMap(map[string]string{
		"CHAT__SOURCES":               "a",
		"CHAT__A__RPM":                "18764999",
		"CHAT__A__TPM":                "150000000",
		"CHAT__A__MAX_IN_FLIGHT":      "16777217",
		"EMBEDDING__SOURCES":          "b",
		"EMBEDDING__B__TPM":           "18764998",
		"EMBEDDING__B__RPM":           "1000",
		"EMBEDDING__B__MAX_IN_FLIGHT": "16777216",
	})
	var ce *errs.ConfigError
	require.ErrorAs(t, err, &ce)
	keys := map[string]string{}
	for _, p := range ce.Problems {
		keys[p.Key] = p.Legal
	}
	assert.Len(t, keys, 2, "%v", ce.Problems)
	assert.Contains(t, keys["CHAT__A__RPM"], "multiple of 1000")
	assert.Contains(t, keys, "CHAT__A__MAX_IN_FLIGHT")
	assert.NotContains(t, keys, "CHAT__A__TPM", "a multiple of 1000 within the bound is exact")
}
