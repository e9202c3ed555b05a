package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
)

func TestProberDefaultsAreTheProbersOwn(t *testing.T) {
	s := mustLoad(t, base())
	assert.Equal(t, redis.DefaultProbeInterval, s.Redis.ProbeInterval)
	assert.Equal(t, redis.DefaultProbeTimeout, s.Redis.ProbeTimeout)
	assert.Equal(t, redis.DefaultProbeBackoff, s.Redis.ProbeBackoff)
	assert.Equal(t, redis.DefaultHeartbeatTTL, s.Redis.HeartbeatTTL)
}

func TestProberKeysFromEnv(t *testing.T) {
	for k, v := range map[string]string{
		"CHAT__SOURCES":              "a",
		"PGW_REDIS_PROBE_INTERVAL_S": "0.1",
		"PGW_REDIS_PROBE_TIMEOUT_S":  "0.04",
		"PGW_REDIS_PROBE_BACKOFF_S":  "1.5",
		"PGW_REDIS_HEARTBEAT_TTL_S":  "1",
	} {
		t.Setenv(k, v)
	}
	s, err := config.FromEnv()
	require.NoError(t, err)
	assert.Equal(t, 100*time.Millisecond, s.Redis.ProbeInterval)
	assert.Equal(t, 40*time.Millisecond, s.Redis.ProbeTimeout)
	assert.Equal(t, 1500*time.Millisecond, s.Redis.ProbeBackoff)
	assert.Equal(t, time.Second, s.Redis.HeartbeatTTL)
}

// Setting the interval alone gives a prober that can start: the other
// defaults follow it.
func TestProberDefaultsFollowTheInterval(t *testing.T) {
	s := mustLoad(t, base("PGW_REDIS_PROBE_INTERVAL_S", "0.1"))
	assert.Equal(t, 50*time.Millisecond, s.Redis.ProbeTimeout, "half the interval, under 0.2")
	assert.Equal(t, 2*time.Second, s.Redis.ProbeBackoff)
	assert.Equal(t, 3*time.Second, s.Redis.HeartbeatTTL)

	s = mustLoad(t, base("PGW_REDIS_PROBE_INTERVAL_S", "5"))
	assert.Equal(t, 200*time.Millisecond, s.Redis.ProbeTimeout)
	assert.Equal(t, 5*time.Second, s.Redis.ProbeBackoff, "at least the interval")
	assert.Equal(t, 30*time.Second, s.Redis.HeartbeatTTL, "six intervals")
}

func TestProberKeysInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		key   string
		value string
		legal string
	}{
		{"interval not a number", []string{"PGW_REDIS_PROBE_INTERVAL_S", "fast"}, "PGW_REDIS_PROBE_INTERVAL_S", "fast", "seconds (fractions allowed) in [0.001, 10000000]"},
		{"interval zero", []string{"PGW_REDIS_PROBE_INTERVAL_S", "0"}, "PGW_REDIS_PROBE_INTERVAL_S", "0", "[0.001, 10000000]"},
		{"timeout negative", []string{"PGW_REDIS_PROBE_TIMEOUT_S", "-1"}, "PGW_REDIS_PROBE_TIMEOUT_S", "-1", "[0.001, 10000000]"},
		{"timeout over half the interval", []string{"PGW_REDIS_PROBE_INTERVAL_S", "0.5", "PGW_REDIS_PROBE_TIMEOUT_S", "0.3"},
			"PGW_REDIS_PROBE_TIMEOUT_S", "0.3", "seconds in [0.001, 0.25]: at most half PGW_REDIS_PROBE_INTERVAL_S (0.5)"},
		{"timeout equal to the interval", []string{"PGW_REDIS_PROBE_INTERVAL_S", "0.2", "PGW_REDIS_PROBE_TIMEOUT_S", "0.2"},
			"PGW_REDIS_PROBE_TIMEOUT_S", "0.2", "at most half PGW_REDIS_PROBE_INTERVAL_S (0.2)"},
		{"backoff under the interval", []string{"PGW_REDIS_PROBE_INTERVAL_S", "1", "PGW_REDIS_PROBE_BACKOFF_S", "0.5"},
			"PGW_REDIS_PROBE_BACKOFF_S", "0.5", "seconds in [1, 10000000]: at least PGW_REDIS_PROBE_INTERVAL_S (1)"},
		{"heartbeat not over the interval", []string{"PGW_REDIS_PROBE_INTERVAL_S", "1", "PGW_REDIS_HEARTBEAT_TTL_S", "1"},
			"PGW_REDIS_HEARTBEAT_TTL_S", "1", "seconds in (1, 10000000]: more than PGW_REDIS_PROBE_INTERVAL_S (1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := mustFail(t, base(tc.env...))
			assert.Equal(t, []string{tc.key}, keys(ce), "one problem, for the key: %v", ce)
			p := problem(t, ce, tc.key)
			assert.Equal(t, tc.value, p.Value)
			assert.Contains(t, p.Legal, tc.legal)
		})
	}
}

func TestProberSettingsInCodeValidate(t *testing.T) {
	s := config.Settings{
		Redis:  config.RedisSettings{ProbeInterval: time.Second, ProbeTimeout: 600 * time.Millisecond, ProbeBackoff: time.Millisecond},
		Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{{Name: "a"}}}},
	}
	err := s.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PGW_REDIS_PROBE_TIMEOUT_S")
	assert.Contains(t, err.Error(), "PGW_REDIS_PROBE_BACKOFF_S")
	assert.NotContains(t, err.Error(), "PGW_REDIS_HEARTBEAT_TTL_S", "its default follows the interval")
}

func TestProberKeyNearMissIsReported(t *testing.T) {
	ce := mustFail(t, base("PGW_REDIS_PROBE_INTERVAL", "0.1"))
	p := problem(t, ce, "PGW_REDIS_PROBE_INTERVAL")
	assert.Contains(t, p.Legal, "PGW_REDIS_PROBE_INTERVAL_S")
}
