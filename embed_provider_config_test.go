package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// An Anthropic source in EMBEDDING (Anthropic has no embeddings API) is a
// problem of the same *ConfigError as every other one: a first run with
// a typo elsewhere lists both, not the typo first and the provider on the
// next run.
func TestAnthropicEmbeddingSourceComesWithEveryOtherProblem(t *testing.T) {
	env := map[string]string{
		"PGW_SCOPES":                  "CHAT,EMBEDDING",
		"CHAT__SOURCES":               "primary",
		"CHAT__PRIMARY__BASE_URL":     "https://api.openai.com/v1",
		"CHAT__PRIMARY__RPM":          "sixty",
		"EMBEDDING__SOURCES":          "claude",
		"EMBEDDING__CLAUDE__BASE_URL": "https://api.anthropic.com",
		"EMBEDDING__CLAUDE__PROVIDER": "anthropic",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	_, err := pgw.NewFromEnv(context.Background())
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	keys := map[string]pgw.ConfigProblem{}
	for _, p := range ce.Problems {
		keys[p.Key] = p
	}
	assert.Contains(t, keys, "CHAT__PRIMARY__RPM")
	if assert.Contains(t, keys, "EMBEDDING__CLAUDE__PROVIDER", "in the same error") {
		assert.Equal(t, "anthropic", keys["EMBEDDING__CLAUDE__PROVIDER"].Value)
		assert.Contains(t, keys["EMBEDDING__CLAUDE__PROVIDER"].Legal, "Anthropic has no embeddings API")
	}

	// Alone, it is still refused, by New as by NewFromEnv.
	t.Setenv("CHAT__PRIMARY__RPM", "60")
	_, err = pgw.NewFromEnv(context.Background())
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, 1)
	assert.Equal(t, "EMBEDDING__CLAUDE__PROVIDER", ce.Problems[0].Key)
}
