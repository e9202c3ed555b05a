package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

func TestSourceURLJoinsThePathAndKeepsTheQuery(t *testing.T) {
	cases := []struct{ base, path, want string }{
		{"https://api.example.com/v1", "/chat/completions", "https://api.example.com/v1/chat/completions"},
		{"https://api.example.com/v1/", "/chat/completions", "https://api.example.com/v1/chat/completions"},
		{"https://api.example.com/v1", "chat/completions", "https://api.example.com/v1/chat/completions"},
		{"https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21", "/chat/completions",
			"https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"},
		{"https://h/v1?api-version=1", "/files?limit=2", "https://h/v1/files?api-version=1&limit=2"},
		{"http://127.0.0.1:8080", "/v1/embeddings", "http://127.0.0.1:8080/v1/embeddings"},
	}
	for _, c := range cases {
		got := config.Source{BaseURL: c.base}.URL(c.path)
		assert.Equal(t, c.want, got, "base %q path %q", c.base, c.path)
	}
}

func TestRedactedBaseURLHidesTheQuery(t *testing.T) {
	s := config.Source{BaseURL: "https://h/v1?api-version=2024-10-21&key=hunter2"}
	assert.NotContains(t, s.RedactedBaseURL(), "hunter2")
	assert.Contains(t, s.RedactedBaseURL(), "https://h/v1")
	assert.NotContains(t, config.RedactURL(s.URL("/chat/completions")), "hunter2")
}

func TestProviderKeyIsReadAndValidated(t *testing.T) {
	s, err := config.FromMap(map[string]string{
		"CHAT__SOURCES": "a,b", "CHAT__A__PROVIDER": "anthropic", "CHAT__CIRCUIT_OPEN": "wait",
	})
	require.NoError(t, err)
	require.Len(t, s.Scopes, 1)
	assert.Equal(t, config.ProviderAnthropic, s.Scopes[0].Sources[0].Provider)
	assert.Equal(t, config.ProviderOpenAI, s.Scopes[0].Sources[1].Provider)

	_, err = config.FromMap(map[string]string{"CHAT__SOURCES": "a", "CHAT__A__PROVIDER": "gemini"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHAT__A__PROVIDER")
	assert.Contains(t, err.Error(), "anthropic")
}

// TestJoinURLKeepsPercentEncodingOfBothPaths: path is a URL path as an SDK
// sends it (already escaped) and must reach the upstream as sent, not
// escaped a second time; an escape in BASE_URL's own path stays too.
func TestJoinURLKeepsPercentEncodingOfBothPaths(t *testing.T) {
	cases := []struct{ base, path, want string }{
		{"https://h/v1", "files/a%20b%2Fc", "https://h/v1/files/a%20b%2Fc"},
		{"https://h/v1?api-version=1", "files/a%20b?limit=2", "https://h/v1/files/a%20b?api-version=1&limit=2"},
		{"https://h/a%2Fb/v1", "chat/completions", "https://h/a%2Fb/v1/chat/completions"},
		{"https://h/v1", "models/ft:gpt-4o:org::1", "https://h/v1/models/ft:gpt-4o:org::1"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, config.JoinURL(c.base, c.path), "base %q path %q", c.base, c.path)
	}
}
