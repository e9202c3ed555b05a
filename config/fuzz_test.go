package config_test

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

// fuzzSecret prefixes every __API_KEY value, so that a leak anywhere in an
// error shows up as this marker.
const fuzzSecret = "sk-FZ9q"

// parseFuzzEnv turns "KEY=VALUE" lines into an environment; a value written
// as a Go string literal ("a\nb") is unquoted, so seeds can hold control
// characters.
func parseFuzzEnv(text string) map[string]string {
	env := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		if strings.HasSuffix(k, "__API_KEY") {
			v = fuzzSecret + v
		}
		env[k] = v
	}
	return env
}

func FuzzFromLookup(f *testing.F) {
	for _, seed := range []string{
		"",
		"CHAT__SOURCES=a",
		"CHAT__SOURCES=eu-1,us_2\nCHAT__EU_1__BASE_URL=https://api.example.com/v1\nCHAT__EU_1__API_KEY=k\nCHAT__US_2__TIMEOUT_S=0.5",
		"PGW_SCOPES=OCR,MY_SCOPE\nOCR__SOURCES=o\nMY_SCOPE__SOURCES=x,y\nMY_SCOPE__CIRCUIT_OPEN=wait\nMY_SCOPE__X__PRIORITY=-1",
		"PGW_BREAKER_BACKEND=redis\nPGW_REDIS_URL=redis://:pw@h:6379/1\nPGW_REDIS_CLUSTER_ADDRS=a:1,[::1]:2\nCHAT__SOURCES=a",
		"PGW_BREAKER_BACKEND=noop\nPGW_QUOTA_BACKEND=noop\nPGW_REDIS_DOWN=\nPGW_REDIS_PREFIX=a{b}\nCHAT__SOURCES=a",
		"CHAT__SOURCES=a,A,,b c\nCHAT__COOLDOWN_S=NaN\nCHAT__MAX_COOLDOWN_S=-Inf\nCHAT__PROBE_TTL_S=1e400",
		"CHAT__SOURCES=a\nCHAT__A__API_KEY=\"x\\ny\"\nCHAT__A__BASE_URL=https://u:p@h/#f\nCHAT__A__RPM=99999999999999999999",
		"CHAT__SOURCES=a\nCHAT__CIRCUT_OPEN=wait\nCHAT__A__BASEURL=x\nPGW_REDIS_PREFX=p",
		"CHAT__SOURCES=a\nCHAT__COOLDOWN_S=10000000\nCHAT__A__TIMEOUT_S=10000000\nCHAT__MAX_ATTEMPTS=2147483647",
		"PGW_SCOPES=chat,CHAT,,A__B\nCHAT__SOURCES= \nCHAT__MAX_ATTEMPTS=0x10\nCHAT__POLL_INTERVAL_S=0x1p-4",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		env := parseFuzzEnv(text)
		checkLoad(t, env, func() (*config.Settings, error) { return config.FromLookup(lookupIn(env)) })
		fromMap := checkLoad(t, env, func() (*config.Settings, error) { return config.FromMap(env) })
		if fromMap != nil {
			// FromMap only adds the unknown-key report: what it accepts,
			// FromLookup accepts alike.
			fromLookup, err := config.FromLookup(lookupIn(env))
			if err != nil || !settingsEqual(fromLookup, fromMap) {
				t.Fatalf("FromMap accepted what FromLookup did not read alike: %v", err)
			}
		}
	})
}

// checkLoad asserts the parser's contract: valid Settings or one
// *errs.ConfigError, never both, and no secret in the error.
func checkLoad(t *testing.T, env map[string]string, load func() (*config.Settings, error)) *config.Settings {
	s, err := load()
	if (s == nil) == (err == nil) {
		t.Fatalf("want exactly one of settings and error, got %v and %v", s, err)
	}
	if err != nil {
		var ce *errs.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("error is %T, want *errs.ConfigError: %v", err, err)
		}
		if len(ce.Problems) == 0 {
			t.Fatal("ConfigError without problems")
		}
		if !slices.IsSortedFunc(ce.Problems, func(a, b errs.Problem) int { return strings.Compare(a.Key, b.Key) }) {
			t.Fatalf("problems not sorted by key: %v", ce.Problems)
		}
		for _, p := range ce.Problems {
			if p.Key == "" || p.Legal == "" {
				t.Fatalf("problem without key or legal text: %+v", p)
			}
		}
		if strings.Contains(err.Error(), fuzzSecret) && !markerElsewhere(env) {
			t.Fatalf("API key in error: %v", err)
		}
		return nil
	}
	if verr := s.Validate(); verr != nil {
		t.Fatalf("returned settings do not validate: %v", verr)
	}
	if !settingsEqual(s, ptr(s.WithDefaults())) {
		t.Fatal("returned settings lack defaults")
	}
	for _, sc := range s.Scopes {
		if perr := sc.Policy().Validate(); perr != nil {
			t.Fatalf("scope %s: policy the gates reject: %v", sc.Name, perr)
		}
		if len(sc.Sources) == 0 {
			t.Fatalf("scope %s without sources", sc.Name)
		}
	}
	return s
}

// markerElsewhere reports whether the secret marker also sits in a key or in
// a value other than an API key, where showing it is no leak.
func markerElsewhere(env map[string]string) bool {
	for k, v := range env {
		if strings.Contains(k, fuzzSecret) || (!strings.HasSuffix(k, "__API_KEY") && strings.Contains(v, fuzzSecret)) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// settingsEqual compares settings by value; reflect.DeepEqual follows the
// pointer inside a Secret, so secrets compare by what they hold.
func settingsEqual(a, b *config.Settings) bool { return reflect.DeepEqual(a, b) }
