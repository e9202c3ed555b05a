package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
)

func TestLimitsFromHeadersKey(t *testing.T) {
	s, err := config.FromMap(map[string]string{
		"CHAT__SOURCES": "a,b", "CHAT__A__LIMITS_FROM_HEADERS": "TRUE", "CHAT__A__RPM": "60", "CHAT__A__MAX_IN_FLIGHT": "4",
		"CHAT__B__RPM": "30",
	})
	require.NoError(t, err)
	a, b := s.Scopes[0].Sources[0], s.Scopes[0].Sources[1]
	assert.True(t, a.LimitsFromHeaders)
	assert.False(t, b.LimitsFromHeaders, "default false")
	assert.Equal(t, gate.Limits{RPM: 60, MaxInFlight: 4}, a.Limits(), "the configured limits are kept for display")
	assert.Equal(t, gate.Limits{MaxInFlight: 4}, a.EnforcedLimits(), "the advertised limits replace RPM and TPM")
	assert.Equal(t, gate.Limits{RPM: 30}, b.EnforcedLimits())

	_, err = config.FromMap(map[string]string{"CHAT__SOURCES": "a", "CHAT__A__LIMITS_FROM_HEADERS": "yes"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHAT__A__LIMITS_FROM_HEADERS")
	assert.Contains(t, err.Error(), "true, false")
}
