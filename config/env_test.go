package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
)

func TestFromLookupDefaults(t *testing.T) {
	s := mustLoad(t, base())

	assert.Equal(t, config.BackendMemory, s.BreakerBackend)
	assert.Equal(t, config.BackendMemory, s.QuotaBackend)
	assert.Equal(t, "redis://127.0.0.1:6379/0", s.Redis.URL.Reveal())
	assert.Empty(t, s.Redis.ClusterAddrs)
	assert.Equal(t, "pgw", s.Redis.Prefix)
	assert.Equal(t, config.RedisFailOpen, s.Redis.Down)

	require.Len(t, s.Scopes, 1, "EMBEDDING and OCR have no __SOURCES: inactive")
	sc := s.Scopes[0]
	assert.Equal(t, "CHAT", sc.Name)
	assert.Equal(t, config.ModeWait, sc.QuotaFull)
	assert.Equal(t, config.ModeFailFast, sc.CircuitOpen)
	assert.Equal(t, 3, sc.MaxAttempts)
	assert.Equal(t, 300*time.Second, sc.StallWindow)
	assert.Equal(t, 50*time.Millisecond, sc.PollInterval)
	assert.Equal(t, 5, sc.FailureThreshold)
	assert.Equal(t, 60*time.Second, sc.Cooldown)
	assert.Equal(t, 600*time.Second, sc.MaxCooldown)
	assert.Equal(t, gate.DefaultProbeTTL(60*time.Second, 60*time.Second), sc.ProbeTTL)
	assert.Equal(t, 120*time.Second, sc.ProbeTTL)

	require.Len(t, sc.Sources, 1)
	assert.Equal(t, config.Source{Name: "a", Timeout: 60 * time.Second, Weight: 1, Provider: config.ProviderOpenAI}, sc.Sources[0])
}

func TestEveryDefaultScopeIsReadWhenItsSourcesAreSet(t *testing.T) {
	s := mustLoad(t, map[string]string{"OCR__SOURCES": "o", "CHAT__SOURCES": "c", "EMBEDDING__SOURCES": "e"})
	require.Len(t, s.Scopes, 3)
	assert.Equal(t, []string{"CHAT", "EMBEDDING", "OCR"},
		[]string{s.Scopes[0].Name, s.Scopes[1].Name, s.Scopes[2].Name}, "order of PGW_SCOPES")
	sc, ok := s.Scope("OCR")
	require.True(t, ok)
	assert.Equal(t, "o", sc.Sources[0].Name)
	_, ok = s.Scope("NOPE")
	assert.False(t, ok)
}

func TestQuotaBackendDefaultFollowsBreaker(t *testing.T) {
	for breaker, quota := range map[string]config.Backend{
		"memory": config.BackendMemory, "redis": config.BackendRedis, "noop": config.BackendMemory,
	} {
		s := mustLoad(t, base("PGW_BREAKER_BACKEND", breaker))
		assert.Equal(t, config.Backend(breaker), s.BreakerBackend)
		assert.Equal(t, quota, s.QuotaBackend, "breaker %s", breaker)
	}
	s := mustLoad(t, base("PGW_BREAKER_BACKEND", "redis", "PGW_QUOTA_BACKEND", "memory"))
	assert.Equal(t, config.BackendMemory, s.QuotaBackend)
}

// keyCase is one key's behaviour: its value when unset, values that parse to
// something, and values that must be rejected with a problem for the key.
type keyCase struct {
	key     string
	get     func(*config.Settings) any
	def     any
	valid   map[string]any
	invalid []string
}

func scope0(s *config.Settings) *config.ScopeSettings { return &s.Scopes[0] }
func src0(s *config.Settings) *config.Source          { return &s.Scopes[0].Sources[0] }

var (
	badSeconds   = []string{"", " ", "0", "-1", "-0.5", "NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "abc", "1s", "60 s", "1e8", "0.0009", "1e-10", "0x", "1,5"}
	badPositive  = []string{"", "0", "-1", "1.5", "abc", "1e3", "2147483648", "99999999999999999999"}
	badNonNeg    = []string{"", "-1", "1.5", "abc", "2147483648", "0x10"}
	badModeValue = []string{"", "WAIT", "Wait", "failfast", "fail-fast", "sometimes"}
)

func keyCases() []keyCase {
	seconds := func(key string, get func(*config.Settings) time.Duration, def time.Duration, valid map[string]any) keyCase {
		return keyCase{key: key, get: func(s *config.Settings) any { return get(s) }, def: def, valid: valid, invalid: badSeconds}
	}
	ints := func(key string, get func(*config.Settings) int, def int, valid map[string]any, invalid []string) keyCase {
		return keyCase{key: key, get: func(s *config.Settings) any { return get(s) }, def: def, valid: valid, invalid: invalid}
	}
	frac := map[string]any{"0.5": 500 * time.Millisecond, " 2 ": 2 * time.Second, "0.001": time.Millisecond, "1e3": 1000 * time.Second, "10000000": 10_000_000 * time.Second}
	return []keyCase{
		{key: "PGW_BREAKER_BACKEND", get: func(s *config.Settings) any { return s.BreakerBackend }, def: config.BackendMemory,
			valid:   map[string]any{"memory": config.BackendMemory, "redis": config.BackendRedis, "noop": config.BackendNoop},
			invalid: []string{"", "Memory", "mem", "REDIS", "none"}},
		{key: "PGW_QUOTA_BACKEND", get: func(s *config.Settings) any { return s.QuotaBackend }, def: config.BackendMemory,
			valid:   map[string]any{"memory": config.BackendMemory, "redis": config.BackendRedis, " redis": config.BackendRedis},
			invalid: []string{"", "noop", "Redis", "x"}},
		{key: "PGW_REDIS_URL", get: func(s *config.Settings) any { return s.Redis.URL.Reveal() }, def: "redis://127.0.0.1:6379/0",
			valid: map[string]any{
				"redis://:pw@10.0.0.1:6380/2":   "redis://:pw@10.0.0.1:6380/2",
				"rediss://user:pw@cache:6379/0": "rediss://user:pw@cache:6379/0",
				"unix:///tmp/redis.sock":        "unix:///tmp/redis.sock",
				"redis://h?dial_timeout=3s":     "redis://h?dial_timeout=3s",
			},
			invalid: []string{"", "http://h:6379", "h:6379", "redis://h/abc", "redis://h/0/1", "redis://h?bogus=1", "unix://", "redis://[::1"}},
		{key: "PGW_REDIS_CLUSTER_ADDRS", get: func(s *config.Settings) any { return s.Redis.ClusterAddrs }, def: []string(nil),
			valid: map[string]any{
				"a:7000":                      []string{"a:7000"},
				" 10.0.0.1:7000 , [::1]:7001": []string{"10.0.0.1:7000", "[::1]:7001"},
			},
			invalid: []string{"", " ", "a", "a:0", "a:65536", "a:x", ":7000", "a:1,,b:2", "a:1,", "redis://a:1"}},
		{key: "PGW_REDIS_PREFIX", get: func(s *config.Settings) any { return s.Redis.Prefix }, def: "pgw",
			valid:   map[string]any{"app1": "app1", "my:app": "my:app"},
			invalid: []string{"", "a b", " a", "a{b", "}", "é", "a\tb"}},
		{key: "PGW_REDIS_DOWN", get: func(s *config.Settings) any { return s.Redis.Down }, def: config.RedisFailOpen,
			valid:   map[string]any{"fail_open": config.RedisFailOpen, "fail_closed": config.RedisFailClosed},
			invalid: []string{"", "open", "FAIL_OPEN", "fail-closed"}},
		{key: "CHAT__QUOTA_FULL", get: func(s *config.Settings) any { return scope0(s).QuotaFull }, def: config.ModeWait,
			valid:   map[string]any{"wait": config.ModeWait, "fail_fast": config.ModeFailFast},
			invalid: badModeValue},
		{key: "CHAT__CIRCUIT_OPEN", get: func(s *config.Settings) any { return scope0(s).CircuitOpen }, def: config.ModeFailFast,
			valid:   map[string]any{"wait": config.ModeWait, "fail_fast": config.ModeFailFast, "wait\n": config.ModeWait},
			invalid: badModeValue},
		ints("CHAT__MAX_ATTEMPTS", func(s *config.Settings) int { return scope0(s).MaxAttempts }, 3,
			map[string]any{"1": 1, "+7": 7, "2147483647": 2147483647}, badPositive),
		seconds("CHAT__STALL_WINDOW_S", func(s *config.Settings) time.Duration { return scope0(s).StallWindow }, 300*time.Second, frac),
		seconds("CHAT__POLL_INTERVAL_S", func(s *config.Settings) time.Duration { return scope0(s).PollInterval }, 50*time.Millisecond, frac),
		ints("CHAT__FAILURE_THRESHOLD", func(s *config.Settings) int { return scope0(s).FailureThreshold }, 5,
			map[string]any{"1": 1, "20": 20}, badPositive),
		seconds("CHAT__COOLDOWN_S", func(s *config.Settings) time.Duration { return scope0(s).Cooldown }, 60*time.Second, frac),
		seconds("CHAT__MAX_COOLDOWN_S", func(s *config.Settings) time.Duration { return scope0(s).MaxCooldown }, 600*time.Second,
			map[string]any{"60": 60 * time.Second, "3600.5": 3600500 * time.Millisecond}),
		seconds("CHAT__PROBE_TTL_S", func(s *config.Settings) time.Duration { return scope0(s).ProbeTTL }, 120*time.Second, frac),
		{key: "CHAT__A__BASE_URL", get: func(s *config.Settings) any { return src0(s).BaseURL }, def: "",
			valid: map[string]any{
				"https://api.example.com/v1":                 "https://api.example.com/v1",
				"http://10.0.0.1:8080":                       "http://10.0.0.1:8080",
				" https://x.openai.azure.com/?api-version=1": "https://x.openai.azure.com/?api-version=1",
			},
			invalid: []string{"", "api.example.com", "/v1", "ftp://h", "https://", "https://u:p@h", "https://h/#frag", "mailto:x@y", "http://h:port"}},
		{key: "CHAT__A__API_KEY", get: func(s *config.Settings) any { return src0(s).APIKey.Reveal() }, def: "",
			valid:   map[string]any{"sk-1": "sk-1", "": "", "key with inner space": "key with inner space"},
			invalid: []string{"sk-1\n", " sk-1", "sk-1 ", "sk\x00x", "sk\x1bx"}},
		{key: "CHAT__A__MODEL", get: func(s *config.Settings) any { return src0(s).Model }, def: "",
			valid: map[string]any{"gpt-4o": "gpt-4o", "": "", " spaced ": " spaced "}},
		seconds("CHAT__A__TIMEOUT_S", func(s *config.Settings) time.Duration { return src0(s).Timeout }, 60*time.Second, frac),
		ints("CHAT__A__RPM", func(s *config.Settings) int { return src0(s).RPM }, 0, map[string]any{"0": 0, "600": 600}, badNonNeg),
		ints("CHAT__A__TPM", func(s *config.Settings) int { return src0(s).TPM }, 0, map[string]any{"0": 0, "90000": 90000}, badNonNeg),
		ints("CHAT__A__MAX_IN_FLIGHT", func(s *config.Settings) int { return src0(s).MaxInFlight }, 0, map[string]any{"0": 0, "8": 8}, badNonNeg),
		ints("CHAT__A__WEIGHT", func(s *config.Settings) int { return src0(s).Weight }, 1,
			map[string]any{"1": 1, "1000000": 1000000}, []string{"", "0", "-1", "1.5", "1000001", "x"}),
		ints("CHAT__A__PRIORITY", func(s *config.Settings) int { return src0(s).Priority }, 0,
			map[string]any{"0": 0, "-3": -3, "10": 10}, []string{"", "1.5", "x", "2147483648", "-2147483648"}),
		ints("CHAT__A__BATCH_SIZE", func(s *config.Settings) int { return src0(s).BatchSize }, 0, map[string]any{"0": 0, "64": 64}, badNonNeg),
	}
}

func TestEveryKeyDefaultValidAndInvalid(t *testing.T) {
	for _, kc := range keyCases() {
		t.Run(kc.key, func(t *testing.T) {
			t.Run("default", func(t *testing.T) {
				assert.Equal(t, kc.def, kc.get(mustLoad(t, base())))
			})
			for raw, want := range kc.valid {
				t.Run("valid/"+raw, func(t *testing.T) {
					assert.Equal(t, want, kc.get(mustLoad(t, base(kc.key, raw))))
				})
			}
			for _, raw := range kc.invalid {
				t.Run("invalid/"+raw, func(t *testing.T) {
					ce := mustFail(t, base(kc.key, raw))
					assert.Equal(t, []string{kc.key}, keys(ce), "exactly one problem, for the key: %v", ce)
					p := problem(t, ce, kc.key)
					assert.NotEmpty(t, p.Legal)
					if strings.HasSuffix(kc.key, "API_KEY") {
						assert.Equal(t, config.Redacted, p.Value)
					} else if kc.key == "PGW_REDIS_URL" && (raw == "h:6379" || raw == "redis://[::1") {
						assert.Equal(t, config.Redacted, p.Value, "a secret key's value that is no URL is hidden whole")
					} else if !strings.Contains(raw, "@") && !strings.Contains(raw, "?") {
						assert.Equal(t, raw, p.Value, "the value as given")
					}
				})
			}
		})
	}
}

func TestLegalTextNamesTheLegalValues(t *testing.T) {
	for key, want := range map[string]string{
		"PGW_BREAKER_BACKEND": "memory, redis, noop",
		"PGW_QUOTA_BACKEND":   "memory, redis",
		"PGW_REDIS_DOWN":      "fail_open, fail_closed",
		"CHAT__CIRCUIT_OPEN":  "wait, fail_fast",
		"CHAT__COOLDOWN_S":    "seconds (fractions allowed) in [0.001, 10000000]",
		"CHAT__MAX_ATTEMPTS":  "integer in [1, 2147483647]",
		"CHAT__A__RPM":        "0 for unlimited, 1..18764998, or a multiple of 1000 up to 2147483000",
		"CHAT__A__PRIORITY":   "lower is tried first",
	} {
		p := problem(t, mustFail(t, base(key, "bogus")), key)
		assert.Contains(t, p.Legal, want, key)
	}
}

func TestRedisURLProblemSaysWhyAndHidesPassword(t *testing.T) {
	ce := mustFail(t, base("PGW_REDIS_URL", "redis://:hunter2@h:6379/zero?password=alsosecret"))
	p := problem(t, ce, "PGW_REDIS_URL")
	assert.Equal(t, "redis://<redacted>@h:6379/zero?<redacted>", p.Value)
	assert.Contains(t, p.Legal, "invalid database number")
	assert.NotContains(t, ce.Error(), "hunter2")
	assert.NotContains(t, ce.Error(), "alsosecret")

	ce = mustFail(t, base("PGW_REDIS_URL", "redis://:hunter2@[::1"))
	assert.Equal(t, config.Redacted, problem(t, ce, "PGW_REDIS_URL").Value, "unparseable with '@': hidden whole")
	assert.NotContains(t, ce.Error(), "hunter2")

	// A mistyped scheme leaves the password outside any user info: the
	// value is hidden whole, and go-redis's reason, which quotes the
	// offending part, is cut before the quote.
	for _, raw := range []string{"redis//:hunter2@127.0.0.1:6379/0", "redis:/:hunter2@h/0", "redis:hunter2@h", "hunter2"} {
		ce = mustFail(t, base("PGW_REDIS_URL", raw))
		assert.Equal(t, config.Redacted, problem(t, ce, "PGW_REDIS_URL").Value, raw)
		assert.NotContains(t, ce.Error(), "hunter2", raw)
	}
}

func TestBaseURLProblemHidesCredentials(t *testing.T) {
	ce := mustFail(t, base("CHAT__A__BASE_URL", "https://bob:hunter2@api.example.com/v1?key=sk-in-query"))
	assert.Equal(t, "https://<redacted>@api.example.com/v1?<redacted>", problem(t, ce, "CHAT__A__BASE_URL").Value)
	assert.NotContains(t, ce.Error(), "hunter2")
	assert.NotContains(t, ce.Error(), "sk-in-query")
}

func TestSecretsNeverInConfigErrors(t *testing.T) {
	const key = "sk-live-SECRET-7f3a"
	env := base(
		"CHAT__SOURCES", "a,b",
		"CHAT__A__API_KEY", key+"\n", // invalid: trailing newline
		"CHAT__B__API_KEY", key, // valid, next to bad keys of the same source
		"CHAT__B__RPM", "-1",
		"CHAT__B__API_KY", key, // unknown key: value hidden too
		"PGW_REDIS_URL", "redis://:"+key+"@h:6379/x",
	)
	ce := mustFail(t, env)
	assert.NotContains(t, ce.Error(), "SECRET")
	for _, p := range ce.Problems {
		assert.NotContains(t, p.Value, "SECRET", p.Key)
	}
	assert.Equal(t, []string{"CHAT__A__API_KEY", "CHAT__B__API_KY", "CHAT__B__RPM", "PGW_REDIS_URL"}, keys(ce))
}

func TestOneConfigErrorListsEveryBadKey(t *testing.T) {
	env := map[string]string{
		"PGW_BREAKER_BACKEND":       "etcd",
		"PGW_QUOTA_BACKEND":         "noop",
		"PGW_REDIS_URL":             "http://h",
		"PGW_REDIS_CLUSTER_ADDRS":   "a:1,b",
		"PGW_REDIS_PREFIX":          "",
		"PGW_REDIS_DOWN":            "maybe",
		"PGW_SCOPES":                "CHAT,EMBEDDING,chat",
		"CHAT__SOURCES":             "eu-1,EU_1,us 2",
		"CHAT__QUOTA_FULL":          "later",
		"CHAT__CIRCUIT_OPEN":        "",
		"CHAT__MAX_ATTEMPTS":        "0",
		"CHAT__STALL_WINDOW_S":      "NaN",
		"CHAT__POLL_INTERVAL_S":     "-0.05",
		"CHAT__FAILURE_THRESHOLD":   "five",
		"CHAT__COOLDOWN_S":          "Inf",
		"CHAT__MAX_COOLDOWN_S":      "0",
		"CHAT__PROBE_TTL_S":         "1e99",
		"CHAT__EU_1__BASE_URL":      "api.example.com",
		"CHAT__EU_1__API_KEY":       "sk-secret\r\n",
		"CHAT__EU_1__TIMEOUT_S":     "60s",
		"CHAT__EU_1__RPM":           "-5",
		"CHAT__EU_1__TPM":           "1.5",
		"CHAT__EU_1__WEIGHT":        "0",
		"CHAT__EU_1__PRIORITY":      "high",
		"CHAT__EU_1__BATCH_SIZE":    "-1",
		"CHAT__EU_1__MAX_IN_FLIGHT": "x",
		"CHAT__CIRCUT_OPEN":         "wait",
		"EMBEDDING__SOURCES":        "",
	}
	ce := mustFail(t, env)
	want := []string{
		"CHAT__CIRCUIT_OPEN", "CHAT__CIRCUT_OPEN", "CHAT__COOLDOWN_S",
		"CHAT__EU_1__API_KEY", "CHAT__EU_1__BASE_URL", "CHAT__EU_1__BATCH_SIZE", "CHAT__EU_1__MAX_IN_FLIGHT",
		"CHAT__EU_1__PRIORITY", "CHAT__EU_1__RPM", "CHAT__EU_1__TIMEOUT_S", "CHAT__EU_1__TPM", "CHAT__EU_1__WEIGHT",
		"CHAT__FAILURE_THRESHOLD", "CHAT__MAX_ATTEMPTS", "CHAT__MAX_COOLDOWN_S", "CHAT__POLL_INTERVAL_S",
		"CHAT__PROBE_TTL_S", "CHAT__QUOTA_FULL",
		"CHAT__SOURCES", "CHAT__SOURCES", // eu-1/EU_1 share a key; "us 2" is no name
		"CHAT__STALL_WINDOW_S",
		"EMBEDDING__SOURCES",
		"PGW_BREAKER_BACKEND", "PGW_QUOTA_BACKEND", "PGW_REDIS_CLUSTER_ADDRS", "PGW_REDIS_DOWN",
		"PGW_REDIS_PREFIX", "PGW_REDIS_URL", "PGW_SCOPES",
	}
	assert.Equal(t, want, keys(ce), "every bad key, once, sorted: %v", ce)
	msg := ce.Error()
	for _, k := range want {
		assert.Contains(t, msg, k+"=")
	}
	assert.Contains(t, msg, `CHAT__QUOTA_FULL="later" (legal: wait, fail_fast)`)
	assert.Contains(t, msg, `PGW_SCOPES="chat" (legal: upper-case`)
	assert.Contains(t, msg, "did you mean CHAT__CIRCUIT_OPEN?")
	assert.NotContains(t, msg, "sk-secret")
	assert.Equal(t, "PGW-CONFIG", ce.Code())
}

func TestSourceNamesKeptAsWrittenWithKeysUpperCased(t *testing.T) {
	s := mustLoad(t, map[string]string{
		"CHAT__SOURCES":              " eu-1 , openai_main,Local2 ",
		"CHAT__EU_1__BASE_URL":       "https://eu.example.com",
		"CHAT__OPENAI_MAIN__MODEL":   "gpt",
		"CHAT__LOCAL2__PRIORITY":     "1",
		"CHAT__LOCAL2__TIMEOUT_S":    "30",
		"CHAT__OPENAI_MAIN__WEIGHT":  "3",
		"CHAT__OPENAI_MAIN__API_KEY": "k",
	})
	sc := s.Scopes[0]
	require.Len(t, sc.Sources, 3)
	assert.Equal(t, "eu-1", sc.Sources[0].Name)
	assert.Equal(t, "https://eu.example.com", sc.Sources[0].BaseURL)
	assert.Equal(t, "openai_main", sc.Sources[1].Name)
	assert.Equal(t, "gpt", sc.Sources[1].Model)
	assert.Equal(t, 3, sc.Sources[1].Weight)
	assert.Equal(t, "k", sc.Sources[1].APIKey.Reveal())
	assert.Equal(t, "Local2", sc.Sources[2].Name)
	assert.Equal(t, 1, sc.Sources[2].Priority)
	assert.Equal(t, 9, sc.MaxAttempts, "3 × 3 sources")
	assert.Equal(t, "EU_1", config.Key("eu-1"))
	src, ok := sc.Source("Local2")
	require.True(t, ok)
	assert.Equal(t, 30*time.Second, src.Timeout)
}

func TestSourcesListRules(t *testing.T) {
	for _, tc := range []struct {
		raw, value, legal string
	}{
		{"", "", "none empty"},
		{" ", " ", "none empty"},
		{"a,,b", "a,,b", "none empty"},
		{"a,", "a,", "none empty"},
		{"a b", "a b", "letters and digits"},
		{"a.b", "a.b", "letters and digits"},
		{"-a", "-a", "letters and digits"},
		{"a--b", "a--b", "letters and digits"},
		{"a_", "a_", "letters and digits"},
		{"a__b", "a__b", "letters and digits"},
		{"a{b}", "a{b}", "letters and digits"},
		{"eu-1,EU_1", "eu-1,EU_1", "both give EU_1"},
		{"a,a", "a,a", "both give A"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			p := problem(t, mustFail(t, map[string]string{"CHAT__SOURCES": tc.raw}), "CHAT__SOURCES")
			assert.Equal(t, tc.value, p.Value)
			assert.Contains(t, p.Legal, tc.legal)
		})
	}
}

func TestScopesListRules(t *testing.T) {
	s := mustLoad(t, map[string]string{"PGW_SCOPES": " MY_SCOPE , V2", "MY_SCOPE__SOURCES": "x", "V2__SOURCES": "y"})
	require.Len(t, s.Scopes, 2)
	assert.Equal(t, "MY_SCOPE", s.Scopes[0].Name)
	assert.Equal(t, "V2", s.Scopes[1].Name)

	for _, tc := range []struct{ raw, value, legal string }{
		{"", "", "none empty"},
		{"CHAT,", "CHAT,", "none empty"},
		{"chat", "chat", "upper-case"},
		{"A__B", "A__B", "upper-case"},
		{"_X", "_X", "upper-case"},
		{"1X", "1X", "upper-case"},
		{"CHAT-2", "CHAT-2", "upper-case"},
		{"CHAT,CHAT", "CHAT", "without repeats"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			p := problem(t, mustFail(t, map[string]string{"PGW_SCOPES": tc.raw, "CHAT__SOURCES": "a"}), "PGW_SCOPES")
			assert.Equal(t, tc.value, p.Value)
			assert.Contains(t, p.Legal, tc.legal)
		})
	}
}

func TestNoActiveScopeIsAnError(t *testing.T) {
	ce := mustFail(t, map[string]string{})
	p := problem(t, ce, "PGW_SCOPES")
	assert.Equal(t, "CHAT,EMBEDDING,OCR", p.Value)
	assert.Contains(t, p.Legal, "none of CHAT__SOURCES, EMBEDDING__SOURCES, OCR__SOURCES is set")
	assert.Len(t, ce.Problems, 1)

	// A scope not listed in PGW_SCOPES is not read.
	mustFail(t, map[string]string{"PGW_SCOPES": "OCR", "CHAT__SOURCES": "a"})
}

func TestKeysOfInactiveScopesAreNotRead(t *testing.T) {
	env := base("OCR__CIRCUIT_OPEN", "bogus", "OCR__COOLDOWN_S", "-1")
	s, err := config.FromLookup(lookupIn(env))
	require.NoError(t, err)
	_, ok := s.Scope("OCR")
	assert.False(t, ok)
	// They are reported by the loaders that see every key: set, they would
	// be ignored.
	ce := mustFail(t, env)
	assert.Equal(t, []string{"OCR__CIRCUIT_OPEN", "OCR__COOLDOWN_S"}, keys(ce))
	assert.Contains(t, problem(t, ce, "OCR__COOLDOWN_S").Legal, "OCR__SOURCES is not set, so scope OCR is inactive")
}

func TestMaxCooldownBelowCooldownIsAnError(t *testing.T) {
	p := problem(t, mustFail(t, base("CHAT__COOLDOWN_S", "120", "CHAT__MAX_COOLDOWN_S", "90")), "CHAT__MAX_COOLDOWN_S")
	assert.Equal(t, "90", p.Value)
	assert.Equal(t, "seconds ≥ CHAT__COOLDOWN_S (120)", p.Legal)

	// Without MAX_COOLDOWN_S, the default grows to the cooldown.
	s := mustLoad(t, base("CHAT__COOLDOWN_S", "900"))
	assert.Equal(t, 900*time.Second, s.Scopes[0].MaxCooldown)
}

func TestProbeTTLDefaultUsesSlowestSourceTimeout(t *testing.T) {
	s := mustLoad(t, map[string]string{
		"CHAT__SOURCES": "fast,slow", "CHAT__FAST__TIMEOUT_S": "10", "CHAT__SLOW__TIMEOUT_S": "45", "CHAT__COOLDOWN_S": "30",
	})
	assert.Equal(t, 90*time.Second, s.Scopes[0].ProbeTTL, "max(2 × 45, 30, 45 + 5)")
	assert.Equal(t, gate.DefaultProbeTTL(30*time.Second, 45*time.Second), s.Scopes[0].ProbeTTL)

	s = mustLoad(t, base("CHAT__PROBE_TTL_S", "7.5"))
	assert.Equal(t, 7500*time.Millisecond, s.Scopes[0].ProbeTTL)
}

func TestMaxAttemptsDefaultIsThreePerSource(t *testing.T) {
	s := mustLoad(t, map[string]string{"CHAT__SOURCES": "a,b", "CHAT__MAX_ATTEMPTS": "4", "OCR__SOURCES": "a,b,c,d"})
	assert.Equal(t, 4, s.Scopes[0].MaxAttempts)
	assert.Equal(t, 12, s.Scopes[1].MaxAttempts)
}

func TestUnknownKeysAreReportedByFromMap(t *testing.T) {
	for _, tc := range []struct{ key, legal string }{
		{"CHAT__CIRCUT_OPEN", "did you mean CHAT__CIRCUIT_OPEN?"},
		{"CHAT__SOURCE", "did you mean CHAT__SOURCES?"},
		{"OCR__SOURCE", "did you mean OCR__SOURCES?"}, // listed but inactive scope
		{"CHAT__A__BASEURL", "did you mean CHAT__A__BASE_URL?"},
		{"CHAT__A__API__KEY", "did you mean CHAT__A__API_KEY?"},
		{"CHAT__A_BASE_URL", "known: CHAT__{SOURCES,"}, // single underscore: read as a scope key
		{"CHAT__ZZZZZZZZZZZZZZ", "known: CHAT__{SOURCES,QUOTA_FULL"},
		{"PGW_REDIS_PREFX", "did you mean PGW_REDIS_PREFIX?"},
		{"PGW_SCOPE", "did you mean PGW_SCOPES?"},
		{"pgw_redis_url", "did you mean PGW_REDIS_URL?"},
		// The mistakes a first day makes: the source segment mistyped, a
		// source not listed, the case, the underscores.
		{"CHAT__B__API_KEY", "source B is not listed in CHAT__SOURCES (A), so this key is not read; add it there or unset this key; did you mean CHAT__A__API_KEY?"},
		{"CHAT__OLD__BASE_URL", "source OLD is not listed in CHAT__SOURCES (A), so this key is not read"},
		{"CHAT__a__BASE_URL", "did you mean CHAT__A__BASE_URL?"},
		{"chat__sources", "did you mean CHAT__SOURCES?"},
		{"Chat__A__Model", "did you mean CHAT__A__MODEL?"},
		{"CHAT_SOURCES", "did you mean CHAT__SOURCES?"},
		{"CHAT___A__BASE_URL", "did you mean CHAT__A__BASE_URL?"},
		{"CHAT_A__BASE_URL", "did you mean CHAT__A__BASE_URL?"},
		{"CHAT__A___BASE_URL", "did you mean CHAT__A__BASE_URL?"},
		{"CAHT__SOURCES", "did you mean CHAT__SOURCES?"},
		{"CHAT__A__BAES_URL", "did you mean CHAT__A__BASE_URL?"},
		{"CHAT__A__BASE_URLL", "did you mean CHAT__A__BASE_URL?"},
		// Keys of a listed scope without SOURCES, and of a scope not listed.
		{"OCR__CIRCUIT_OPEN", "OCR__SOURCES is not set, so scope OCR is inactive"},
		{"OCR__A__BASE_URL", "OCR__SOURCES is not set, so scope OCR is inactive"},
		{"MY_SCOPE__SOURCES", "scope MY_SCOPE is not in PGW_SCOPES (unset, so CHAT,EMBEDDING,OCR)"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			ce := mustFail(t, base(tc.key, "v"))
			assert.Equal(t, []string{tc.key}, keys(ce))
			p := problem(t, ce, tc.key)
			assert.Equal(t, config.Redacted, p.Value, "an unknown key may be a mistyped secret")
			assert.Contains(t, p.Legal, tc.legal)

			// FromLookup cannot enumerate keys, so it does not see them.
			_, err := config.FromLookup(lookupIn(base(tc.key, "v")))
			assert.NoError(t, err)
		})
	}
	// Keys outside pgw's namespace, even when they share a scope's first
	// letters or the PGW_ prefix, are left alone.
	mustLoad(t, base("PGW_TEST_REDIS_ADDR", "x", "PATH", "/bin", "FOO__BAR", "x",
		"CHATTY", "1", "CHAT_HISTORY_DIR", "/tmp", "chat", "x", "OCR_LANG", "de"))
}

// TestScopeMissingFromExplicitScopesIsReported: a scope whose SOURCES is set
// but which PGW_SCOPES does not list is a problem, and so are its keys.
func TestScopeMissingFromExplicitScopesIsReported(t *testing.T) {
	ce := mustFail(t, map[string]string{
		"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a",
		"EMBEDDING__SOURCES": "e", "EMBEDDING__E__BASE_URL": "https://e.example.com",
	})
	assert.Equal(t, []string{"EMBEDDING__E__BASE_URL", "EMBEDDING__SOURCES"}, keys(ce))
	for _, p := range ce.Problems {
		assert.Contains(t, p.Legal, "scope EMBEDDING is not in PGW_SCOPES (CHAT)")
	}
	// When PGW_SCOPES itself is wrong, that is the problem reported.
	ce = mustFail(t, map[string]string{"PGW_SCOPES": "chat", "CHAT__SOURCES": "a"})
	assert.Equal(t, []string{"PGW_SCOPES"}, keys(ce))
}

// TestEveryMistakeOfEveryScopeInOneError: parse errors, unknown keys, keys of
// inactive scopes and cross-key rules of several scopes come back together.
func TestEveryMistakeOfEveryScopeInOneError(t *testing.T) {
	ce := mustFail(t, map[string]string{
		"PGW_SCOPES":           "CHAT,EMBEDDING,OCR",
		"CHAT__SOURCES":        "primary,backup",
		"CHAT__BAKUP__API_KEY": "sk-x",
		"CHAT__COOLDOWN_S":     "120",
		"CHAT__MAX_COOLDOWN_S": "60",
		"EMBEDDING__SOURCES":   "e",
		"EMBEDDING__E__RPM":    "lots",
		"OCR__O__BASE_URL":     "https://o.example.com",
	})
	assert.Equal(t, []string{"CHAT__BAKUP__API_KEY", "CHAT__MAX_COOLDOWN_S", "EMBEDDING__E__RPM", "OCR__O__BASE_URL"}, keys(ce))
	assert.Contains(t, problem(t, ce, "CHAT__BAKUP__API_KEY").Legal, "did you mean CHAT__BACKUP__API_KEY?")
}

// TestEnvconfigAndLookupReadGlobalsAlike pins FromEnv (envconfig) and
// FromLookup (struct tags read by hand) to the same behaviour for unset,
// empty and set keys.
func TestEnvconfigAndLookupReadGlobalsAlike(t *testing.T) {
	globals := []string{"PGW_BREAKER_BACKEND", "PGW_QUOTA_BACKEND", "PGW_REDIS_URL", "PGW_REDIS_CLUSTER_ADDRS",
		"PGW_REDIS_PREFIX", "PGW_REDIS_DOWN", "PGW_SCOPES", "PGW_REDIS_PROBE_INTERVAL_S", "PGW_REDIS_PROBE_TIMEOUT_S",
		"PGW_REDIS_PROBE_BACKOFF_S", "PGW_REDIS_HEARTBEAT_TTL_S"}
	for _, tc := range []map[string]string{
		{"CHAT__SOURCES": "a"},
		{"CHAT__SOURCES": "a", "PGW_BREAKER_BACKEND": "redis", "PGW_REDIS_URL": "redis://:p@h:1/2",
			"PGW_REDIS_CLUSTER_ADDRS": "h:1,h:2", "PGW_REDIS_PREFIX": "x", "PGW_REDIS_DOWN": "fail_closed"},
		{"CHAT__SOURCES": "a", "PGW_BREAKER_BACKEND": "noop", "PGW_QUOTA_BACKEND": "redis"},
		{"CHAT__SOURCES": "a", "PGW_REDIS_PROBE_INTERVAL_S": "0.1", "PGW_REDIS_PROBE_TIMEOUT_S": "0.04",
			"PGW_REDIS_PROBE_BACKOFF_S": "1", "PGW_REDIS_HEARTBEAT_TTL_S": "0.5"},
		{"CHAT__SOURCES": "a", "PGW_REDIS_PROBE_TIMEOUT_S": "0.3"},
		{"CHAT__SOURCES": "a", "PGW_REDIS_PREFIX": "", "PGW_QUOTA_BACKEND": "", "PGW_SCOPES": "chat"},
		{"PGW_SCOPES": "OCR", "OCR__SOURCES": "o", "OCR__O__API_KEY": "k", "OCR__COOLDOWN_S": "2.5"},
	} {
		for _, k := range append(globals, "CHAT__SOURCES", "OCR__SOURCES") {
			t.Setenv(k, "")
			require.NoError(t, os.Unsetenv(k))
		}
		for k, v := range tc {
			t.Setenv(k, v)
		}
		fromEnv, envErr := config.FromEnv()
		fromLookup, lookupErr := config.FromLookup(lookupIn(tc))
		assert.Equal(t, lookupErr, envErr, "%v", tc)
		assert.Equal(t, fromLookup, fromEnv, "%v", tc)
	}
}

func TestEnvconfigTagDefaultsMatchConstants(t *testing.T) {
	s := mustLoad(t, base())
	assert.Equal(t, config.DefaultBreakerBackend, s.BreakerBackend)
	assert.Equal(t, config.DefaultRedisURL, s.Redis.URL.Reveal())
	assert.Equal(t, config.DefaultRedisPrefix, s.Redis.Prefix)
	assert.Equal(t, config.DefaultRedisDown, s.Redis.Down)
	// What the env tags default to equals what WithDefaults fills in.
	assert.Equal(t, *s, (&config.Settings{Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{{Name: "a"}}}}}).WithDefaults())
	assert.Equal(t, "CHAT,EMBEDDING,OCR", config.DefaultScopes)
}

// TestKeysUnderANearMissOfAScopeAreReported: a key whose scope segment is a
// listed scope mistyped (or in the wrong case) is reported even when the
// rest of the key is mistyped too, so that it is more than one edit from
// any known key.
func TestKeysUnderANearMissOfAScopeAreReported(t *testing.T) {
	for _, tc := range []struct{ key, legal string }{
		{"CAHT__CIRCUIT_OPNE", "no scope CAHT is configured (PGW_SCOPES: unset, so CHAT,EMBEDDING,OCR), so this key is not read; did you mean CHAT__CIRCUIT_OPEN?"},
		{"CHT__A__BASE_UR", "did you mean CHAT__A__BASE_URL?"},
		{"CHATT__SOURCE", "did you mean CHAT__SOURCES?"},
		{"CAHT__ZZZZZZZZ", "did you mean scope CHAT?"},
		{"chat__zzzzzzzz", "did you mean scope CHAT?"},
		{"EMBEDING__X__RPM", "no scope EMBEDING is configured"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			ce := mustFail(t, base(tc.key, "v"))
			assert.Equal(t, []string{tc.key}, keys(ce))
			p := problem(t, ce, tc.key)
			assert.Equal(t, config.Redacted, p.Value)
			assert.Contains(t, p.Legal, tc.legal)
		})
	}
	// Other tools' keys with a short or distant first segment stay alone.
	mustLoad(t, base("OC__X", "1", "CH__X", "1", "CHIPS__X", "1", "Logging__LogLevel__Default", "Debug"))
}
