package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPGWNamesAreJudgedByTheirDistance pins the documented line for names
// with pgw's PGW_ prefix: up to two characters from a pgw key they are a
// problem with a did-you-mean; further from every key they belong to
// someone else in the process (a test harness, another tool) and load
// untouched.
func TestPGWNamesAreJudgedByTheirDistance(t *testing.T) {
	for name, meant := range map[string]string{
		"PGW_REDIS_PREFX":    "PGW_REDIS_PREFIX",
		"PGW_REDIS_PRFX":     "PGW_REDIS_PREFIX",
		"PGW_BRAKER_BAKEND":  "PGW_BREAKER_BACKEND",
		"pgw_scopes":         "PGW_SCOPES",
		"PGW_REDIS_URL_":     "PGW_REDIS_URL",
		"PGW__REDIS__DOWN":   "PGW_REDIS_DOWN",
		"PGW_QUOTA_BACKENDS": "PGW_QUOTA_BACKEND",
	} {
		ce := mustFail(t, base(name, "x"))
		assert.Equal(t, []string{name}, keys(ce), "%v", ce)
		assert.Contains(t, problem(t, ce, name).Legal, "did you mean "+meant+"?", name)
	}
	mustLoad(t, base("PGW_FOO", "x", "PGW_TEST_ADDR", "127.0.0.1:1", "PGW_LOG_LEVEL", "debug",
		"PGW_FAULTSUITE_WORKER", "{}", "PGW_SEED", "42"))
}
