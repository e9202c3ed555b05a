package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// A mistyped separator in {SCOPE}__SOURCES ("primary;backup",
// "primary backup") leaves the scope with no valid source name. The keys of
// those sources are still reported (every problem at once), but they point
// at the broken SOURCES value instead of claiming the list is empty and
// telling the user to add the source "there".
func TestKeysOfSourcesUnderAnInvalidSourcesListPointAtIt(t *testing.T) {
	for _, list := range []string{"primary;backup", "primary backup"} {
		_, err := config.FromMap(map[string]string{
			"CHAT__SOURCES":           list,
			"CHAT__PRIMARY__BASE_URL": "https://api.openai.com/v1",
			"CHAT__PRIMARY__API_KEY":  "sk-x",
			"CHAT__BACKUP__BASE_URL":  "https://b.example.com/v1",
		})
		require.Error(t, err)
		var ce *pgw.ConfigError
		require.True(t, errors.As(err, &ce))
		byKey := map[string]string{}
		for _, p := range ce.Problems {
			byKey[p.Key] = p.Legal
		}
		require.Contains(t, byKey, "CHAT__SOURCES", list)
		for _, k := range []string{"CHAT__PRIMARY__BASE_URL", "CHAT__PRIMARY__API_KEY", "CHAT__BACKUP__BASE_URL"} {
			require.Contains(t, byKey, k, list)
			assert.NotContains(t, byKey[k], "()", "%s under %q", k, list)
			assert.NotContains(t, byKey[k], "add it there", "%s under %q", k, list)
			assert.Contains(t, byKey[k], "CHAT__SOURCES is invalid", "%s under %q", k, list)
		}
	}
}
