package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
)

func codeSettings() config.Settings {
	return config.Settings{Scopes: []config.ScopeSettings{{
		Name:    "CHAT",
		Sources: []config.Source{{Name: "eu-1", BaseURL: "https://eu.example.com", APIKey: config.NewSecret("sk-code")}},
	}}}
}

func validateErr(t *testing.T, s config.Settings) *errs.ConfigError {
	t.Helper()
	err := s.Validate()
	require.Error(t, err)
	var ce *errs.ConfigError
	require.True(t, errors.As(err, &ce), "%T", err)
	return ce
}

func TestZeroFieldsMeanDefaultsInCode(t *testing.T) {
	s := codeSettings()
	require.NoError(t, s.Validate())
	eff := s.WithDefaults()
	assert.Equal(t, config.BackendMemory, eff.BreakerBackend)
	assert.Equal(t, config.BackendMemory, eff.QuotaBackend)
	assert.Equal(t, config.DefaultRedisURL, eff.Redis.URL.Reveal())
	sc := eff.Scopes[0]
	assert.Equal(t, 3, sc.MaxAttempts)
	assert.Equal(t, 60*time.Second, sc.Sources[0].Timeout)
	assert.Equal(t, 1, sc.Sources[0].Weight)

	// WithDefaults copies: the caller's slices are untouched.
	assert.Zero(t, s.Scopes[0].MaxAttempts)
	assert.Zero(t, s.Scopes[0].Sources[0].Timeout)
}

func TestValidateInCodeNamesTheEnvKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*config.Settings)
		key    string
		value  string
	}{
		{"breaker backend", func(s *config.Settings) { s.BreakerBackend = "etcd" }, "PGW_BREAKER_BACKEND", "etcd"},
		{"quota noop", func(s *config.Settings) { s.QuotaBackend = config.BackendNoop }, "PGW_QUOTA_BACKEND", "noop"},
		{"redis url", func(s *config.Settings) { s.Redis.URL = config.NewSecret("redis://:pw@h/x") }, "PGW_REDIS_URL", "redis://<redacted>@h/x"},
		{"cluster addr", func(s *config.Settings) { s.Redis.ClusterAddrs = []string{"a:1", "b"} }, "PGW_REDIS_CLUSTER_ADDRS", "a:1,b"},
		{"prefix", func(s *config.Settings) { s.Redis.Prefix = "a{b}" }, "PGW_REDIS_PREFIX", "a{b}"},
		{"redis down", func(s *config.Settings) { s.Redis.Down = "maybe" }, "PGW_REDIS_DOWN", "maybe"},
		{"no scopes", func(s *config.Settings) { s.Scopes = nil }, "PGW_SCOPES", ""},
		{"scope name", func(s *config.Settings) { s.Scopes[0].Name = "chat" }, "PGW_SCOPES", "chat"},
		{"quota full", func(s *config.Settings) { s.Scopes[0].QuotaFull = "later" }, "CHAT__QUOTA_FULL", "later"},
		{"circuit open", func(s *config.Settings) { s.Scopes[0].CircuitOpen = "x" }, "CHAT__CIRCUIT_OPEN", "x"},
		{"max attempts", func(s *config.Settings) { s.Scopes[0].MaxAttempts = -1 }, "CHAT__MAX_ATTEMPTS", "-1"},
		{"stall window", func(s *config.Settings) { s.Scopes[0].StallWindow = -time.Second }, "CHAT__STALL_WINDOW_S", "-1"},
		{"poll", func(s *config.Settings) { s.Scopes[0].PollInterval = time.Microsecond }, "CHAT__POLL_INTERVAL_S", "0.000001"},
		{"threshold", func(s *config.Settings) { s.Scopes[0].FailureThreshold = -2 }, "CHAT__FAILURE_THRESHOLD", "-2"},
		{"cooldown", func(s *config.Settings) { s.Scopes[0].Cooldown = -time.Second }, "CHAT__COOLDOWN_S", "-1"},
		{"max cooldown", func(s *config.Settings) {
			s.Scopes[0].Cooldown, s.Scopes[0].MaxCooldown = 2*time.Minute, time.Minute
		}, "CHAT__MAX_COOLDOWN_S", "60"},
		{"probe ttl", func(s *config.Settings) { s.Scopes[0].ProbeTTL = 1 << 62 }, "CHAT__PROBE_TTL_S", "4611686018.427388"},
		{"no sources", func(s *config.Settings) { s.Scopes[0].Sources = nil }, "CHAT__SOURCES", ""},
		{"source name", func(s *config.Settings) { s.Scopes[0].Sources[0].Name = "eu 1" }, "CHAT__SOURCES", "eu 1"},
		{"base url", func(s *config.Settings) { s.Scopes[0].Sources[0].BaseURL = "eu.example.com" }, "CHAT__EU_1__BASE_URL", "eu.example.com"},
		{"api key", func(s *config.Settings) { s.Scopes[0].Sources[0].APIKey = config.NewSecret("sk\n") }, "CHAT__EU_1__API_KEY", config.Redacted},
		{"timeout", func(s *config.Settings) { s.Scopes[0].Sources[0].Timeout = -1 }, "CHAT__EU_1__TIMEOUT_S", "-0.000000001"},
		{"rpm", func(s *config.Settings) { s.Scopes[0].Sources[0].RPM = -1 }, "CHAT__EU_1__RPM", "-1"},
		{"tpm", func(s *config.Settings) { s.Scopes[0].Sources[0].TPM = -1 }, "CHAT__EU_1__TPM", "-1"},
		{"in flight", func(s *config.Settings) { s.Scopes[0].Sources[0].MaxInFlight = -1 }, "CHAT__EU_1__MAX_IN_FLIGHT", "-1"},
		{"weight", func(s *config.Settings) { s.Scopes[0].Sources[0].Weight = -1 }, "CHAT__EU_1__WEIGHT", "-1"},
		{"priority", func(s *config.Settings) { s.Scopes[0].Sources[0].Priority = 1 << 40 }, "CHAT__EU_1__PRIORITY", "1099511627776"},
		{"batch", func(s *config.Settings) { s.Scopes[0].Sources[0].BatchSize = -1 }, "CHAT__EU_1__BATCH_SIZE", "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := codeSettings()
			tc.mutate(&s)
			ce := validateErr(t, s)
			assert.Equal(t, []string{tc.key}, keys(ce), "%v", ce)
			p := problem(t, ce, tc.key)
			assert.Equal(t, tc.value, p.Value)
			assert.NotEmpty(t, p.Legal)
		})
	}
}

func TestValidateInCodeScopeAndSourceCollisions(t *testing.T) {
	s := codeSettings()
	s.Scopes = append(s.Scopes, s.Scopes[0])
	ce := validateErr(t, s)
	assert.Equal(t, "scope names without repeats", problem(t, ce, "PGW_SCOPES").Legal)

	s = codeSettings()
	s.Scopes[0].Sources = append(s.Scopes[0].Sources, config.Source{Name: "EU_1"})
	ce = validateErr(t, s)
	p := problem(t, ce, "CHAT__SOURCES")
	assert.Equal(t, "eu-1,EU_1", p.Value)
	assert.Contains(t, p.Legal, "both give EU_1")
}

func TestValidateReportsEveryProblemOnce(t *testing.T) {
	s := codeSettings()
	s.BreakerBackend = "x"
	s.Scopes[0].Cooldown = -1
	s.Scopes[0].Sources[0].RPM = -1
	ce := validateErr(t, s)
	assert.Equal(t, []string{"CHAT__COOLDOWN_S", "CHAT__EU_1__RPM", "PGW_BREAKER_BACKEND"}, keys(ce))
	assert.NotContains(t, ce.Error(), "sk-code")
}

func TestValidateNilSettings(t *testing.T) {
	var s *config.Settings
	var ce *errs.ConfigError
	require.True(t, errors.As(s.Validate(), &ce))
	assert.Equal(t, "Settings", ce.Problems[0].Key)
}

func TestScopePolicyCarriesTheBreakerKeys(t *testing.T) {
	sc := config.ScopeSettings{
		Name: "CHAT", FailureThreshold: 7, Cooldown: 30 * time.Second, MaxCooldown: 5 * time.Minute, ProbeTTL: 45 * time.Second,
		Sources: []config.Source{{Name: "a"}},
	}
	p := sc.Policy()
	assert.Equal(t, gate.Policy{ConsecutiveFailures: 7, Cooldown: 30 * time.Second, MaxCooldown: 5 * time.Minute, ProbeTTL: 45 * time.Second}, p)
	require.NoError(t, p.Validate())

	// Defaults: gate's, with ProbeTTL from the slowest source.
	p = config.ScopeSettings{Sources: []config.Source{{Name: "a", Timeout: 90 * time.Second}, {Name: "b"}}}.Policy()
	assert.Equal(t, gate.DefaultConsecutiveFailures, p.ConsecutiveFailures)
	assert.Equal(t, gate.DefaultCooldown, p.Cooldown)
	assert.Equal(t, gate.DefaultMaxCooldown, p.MaxCooldown)
	assert.Equal(t, 180*time.Second, p.ProbeTTL)
}

func TestSourceLimits(t *testing.T) {
	assert.Equal(t, gate.Limits{RPM: 60, TPM: 1000, MaxInFlight: 4},
		config.Source{RPM: 60, TPM: 1000, MaxInFlight: 4, Weight: 9}.Limits())
	assert.True(t, config.Source{}.Limits().Unlimited())
}
