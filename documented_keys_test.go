package pgw_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// documentedKeys returns the keys of the README's table that follows the
// line starting with heading: the first cell of each row, backquoted.
func documentedKeys(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(b)
	at := strings.Index(text, "\n"+heading)
	require.GreaterOrEqual(t, at, 0, "README has %q", heading)
	rest := text[at+1:]
	row := regexp.MustCompile("^\\| `([A-Z_{}]+)` \\|")
	var keys []string
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "|") {
			inTable = true
			if m := row.FindStringSubmatch(line); m != nil {
				keys = append(keys, m[1])
			}
			continue
		}
		if inTable {
			break
		}
	}
	require.NotEmpty(t, keys, "rows under %q", heading)
	return keys
}

// typo is key with its last letter doubled: one edit away from it, and
// farther from every other key.
func typo(key string) string { return key + key[len(key)-1:] }

// keySample is a legal value of a documented key and where the settings
// show it.
type keySample struct {
	value string
	want  any
	get   func(*config.Settings) any
}

func src(s *config.Settings) config.Source            { return s.Scopes[0].Sources[0] }
func scopeOf(s *config.Settings) config.ScopeSettings { return s.Scopes[0] }

// TestEveryDocumentedKeyIsReadAndATypoOfItIsRefused: every per-source and
// per-scope key of the README's configuration tables is accepted with a
// legal value and lands in the settings, and the same key with its last
// letter doubled is refused by NewFromEnv with a *ConfigError naming it.
func TestEveryDocumentedKeyIsReadAndATypoOfItIsRefused(t *testing.T) {
	perSource := map[string]keySample{
		"BASE_URL":            {"http://127.0.0.1:9/v1?api-version=1", "http://127.0.0.1:9/v1?api-version=1", func(s *config.Settings) any { return src(s).BaseURL }},
		"API_KEY":             {"sk-documented", "sk-documented", func(s *config.Settings) any { return src(s).APIKey.Reveal() }},
		"MODEL":               {"gpt-4o-mini", "gpt-4o-mini", func(s *config.Settings) any { return src(s).Model }},
		"TIMEOUT_S":           {"0.5", 500 * time.Millisecond, func(s *config.Settings) any { return src(s).Timeout }},
		"RPM":                 {"600", 600, func(s *config.Settings) any { return src(s).RPM }},
		"TPM":                 {"90000", 90000, func(s *config.Settings) any { return src(s).TPM }},
		"MAX_IN_FLIGHT":       {"3", 3, func(s *config.Settings) any { return src(s).MaxInFlight }},
		"WEIGHT":              {"5", 5, func(s *config.Settings) any { return src(s).Weight }},
		"PRIORITY":            {"-2", -2, func(s *config.Settings) any { return src(s).Priority }},
		"BATCH_SIZE":          {"16", 16, func(s *config.Settings) any { return src(s).BatchSize }},
		"PROVIDER":            {"azure", config.ProviderAzure, func(s *config.Settings) any { return src(s).Provider }},
		"MAX_TOKENS":          {"300", 300, func(s *config.Settings) any { return src(s).MaxTokens }},
		"LIMITS_FROM_HEADERS": {"true", true, func(s *config.Settings) any { return src(s).LimitsFromHeaders }},
	}
	perScope := map[string]keySample{
		"SOURCES":           {"a", []string{"a"}, func(s *config.Settings) any { return []string{src(s).Name} }},
		"CIRCUIT_OPEN":      {"wait", config.ModeWait, func(s *config.Settings) any { return scopeOf(s).CircuitOpen }},
		"QUOTA_FULL":        {"fail_fast", config.ModeFailFast, func(s *config.Settings) any { return scopeOf(s).QuotaFull }},
		"MAX_ATTEMPTS":      {"7", 7, func(s *config.Settings) any { return scopeOf(s).MaxAttempts }},
		"STALL_WINDOW_S":    {"12.5", 12500 * time.Millisecond, func(s *config.Settings) any { return scopeOf(s).StallWindow }},
		"POLL_INTERVAL_S":   {"0.2", 200 * time.Millisecond, func(s *config.Settings) any { return scopeOf(s).PollInterval }},
		"FAILURE_THRESHOLD": {"9", 9, func(s *config.Settings) any { return scopeOf(s).FailureThreshold }},
		"COOLDOWN_S":        {"30", 30 * time.Second, func(s *config.Settings) any { return scopeOf(s).Cooldown }},
		"MAX_COOLDOWN_S":    {"900", 900 * time.Second, func(s *config.Settings) any { return scopeOf(s).MaxCooldown }},
		"PROBE_TTL_S":       {"200", 200 * time.Second, func(s *config.Settings) any { return scopeOf(s).ProbeTTL }},
		"BALANCE":           {"latency", config.BalanceLatency, func(s *config.Settings) any { return scopeOf(s).Balance }},
		"HEDGE_AFTER_S":     {"0.5", 500 * time.Millisecond, func(s *config.Settings) any { return scopeOf(s).HedgeAfter }},
		"HEDGE_AFTER":       {"p90", 0.9, func(s *config.Settings) any { return scopeOf(s).HedgeQuantile }},
		"HEDGE_BUDGET":      {"0.2", 0.2, func(s *config.Settings) any { return scopeOf(s).HedgeBudget }},
		"HEDGE_MAX":         {"2", 2, func(s *config.Settings) any { return scopeOf(s).HedgeMax }},
	}
	cases := map[string]keySample{}
	for _, k := range documentedKeys(t, "**Per source**") {
		sample, ok := perSource[k]
		require.True(t, ok, "the README documents per-source key %s: give it a sample here", k)
		cases["CHAT__A__"+k] = sample
	}
	for _, k := range documentedKeys(t, "**Per scope**") {
		k = strings.TrimPrefix(k, "{SCOPE}__")
		sample, ok := perScope[k]
		require.True(t, ok, "the README documents per-scope key %s: give it a sample here", k)
		cases["CHAT__"+k] = sample
	}
	require.Len(t, cases, len(perSource)+len(perScope), "every sample is documented")

	baseEnv := func() map[string]string {
		return map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": "http://127.0.0.1:9/v1"}
	}
	for key, c := range cases {
		t.Run(key, func(t *testing.T) {
			env := baseEnv()
			env[key] = c.value
			s, err := config.FromMap(env)
			require.NoError(t, err)
			assert.Equal(t, c.want, c.get(s))

			if key == "CHAT__SOURCES" {
				return // a typo of it leaves the scope without sources: another test's business
			}
			bad := baseEnv()
			bad[typo(key)] = c.value
			for k, v := range bad {
				t.Setenv(k, v)
			}
			gw, err := pgw.NewFromEnv(context.Background())
			if gw != nil {
				_ = gw.Close()
			}
			var ce *pgw.ConfigError
			require.ErrorAs(t, err, &ce, "%s is refused", typo(key))
			var named []string
			for _, p := range ce.Problems {
				named = append(named, p.Key)
			}
			assert.Contains(t, named, typo(key))
			assert.Contains(t, err.Error(), key, "did you mean the documented key")
		})
	}
}
