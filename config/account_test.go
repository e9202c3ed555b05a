package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

func TestOrganizationAndProjectKeys(t *testing.T) {
	s := mustLoad(t, base("CHAT__SOURCES", "a,b",
		"CHAT__A__ORGANIZATION", "org-a", "CHAT__A__PROJECT", "proj_a"))
	a, b := s.Scopes[0].Sources[0], s.Scopes[0].Sources[1]
	assert.Equal(t, "org-a", a.Organization)
	assert.Equal(t, "proj_a", a.Project)
	assert.Empty(t, b.Organization, "unset: none")
	assert.Empty(t, b.Project)
}

// Each bad value is named with its key and what is legal: empty (unset it
// for none), a control character (it goes into a header), or a source whose
// provider is not OpenAI, from the environment or built in code.
func TestOrganizationAndProjectRejectWhatCannotBeSent(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"empty":           base("CHAT__A__ORGANIZATION", ""),
		"header break":    base("CHAT__A__PROJECT", "proj\r\nX-Injected: 1"),
		"spaces":          base("CHAT__A__ORGANIZATION", " org-a"),
		"azure":           base("CHAT__A__PROVIDER", "azure", "CHAT__A__ORGANIZATION", "org-a"),
		"anthropic":       base("CHAT__A__PROVIDER", "anthropic", "CHAT__A__PROJECT", "proj_a"),
		"anthropic, both": base("CHAT__A__PROVIDER", "anthropic", "CHAT__A__ORGANIZATION", "o", "CHAT__A__PROJECT", "p"),
	} {
		t.Run(name, func(t *testing.T) {
			ce := mustFail(t, env)
			require.NotEmpty(t, ce.Problems)
			for _, p := range ce.Problems {
				assert.Contains(t, []string{"CHAT__A__ORGANIZATION", "CHAT__A__PROJECT"}, p.Key)
				assert.Contains(t, p.Legal, "only with PROVIDER=openai")
			}
			assert.NotContains(t, ce.Error(), "\r\nX-Injected", "the bad value is not echoed raw")
		})
	}

	s := mustLoad(t, base())
	s.Scopes[0].Sources[0].Provider = config.ProviderAzure
	s.Scopes[0].Sources[0].Organization = "org-a"
	err := s.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHAT__A__ORGANIZATION")
	assert.Contains(t, err.Error(), "PROVIDER is azure")

	s = mustLoad(t, base())
	s.Scopes[0].Sources[0].Project = "p\n"
	require.ErrorContains(t, s.Validate(), "CHAT__A__PROJECT")
}
