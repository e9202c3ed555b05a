package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

// base is the smallest valid environment: one scope with one source "a".
func base(extra ...string) map[string]string {
	env := map[string]string{"CHAT__SOURCES": "a"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func lookupIn(env map[string]string) config.LookupFunc {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// mustLoad parses env through FromLookup and FromMap, which must agree when
// no unknown key is involved, and requires success.
func mustLoad(t *testing.T, env map[string]string) *config.Settings {
	t.Helper()
	s, err := config.FromLookup(lookupIn(env))
	require.NoError(t, err)
	require.NotNil(t, s)
	s2, err := config.FromMap(env)
	require.NoError(t, err)
	require.Equal(t, s, s2)
	require.NoError(t, s.Validate(), "loaded settings must validate")
	return s
}

// mustFail parses env and requires a *errs.ConfigError.
func mustFail(t *testing.T, env map[string]string) *errs.ConfigError {
	t.Helper()
	s, err := config.FromMap(env)
	require.Error(t, err)
	require.Nil(t, s)
	var ce *errs.ConfigError
	require.True(t, errors.As(err, &ce), "want *errs.ConfigError, got %T: %v", err, err)
	return ce
}

func problem(t *testing.T, ce *errs.ConfigError, key string) errs.Problem {
	t.Helper()
	for _, p := range ce.Problems {
		if p.Key == key {
			return p
		}
	}
	require.Failf(t, "no problem for key", "%s not in %v", key, ce)
	return errs.Problem{}
}

func keys(ce *errs.ConfigError) []string {
	out := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		out[i] = p.Key
	}
	return out
}
