package pgw_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestBaseURLWithAQueryIsJoinedOnItsPathAndTheQueryKept: an Azure-style
// BASE_URL (…/v1?api-version=…) reaches the upstream as
// …/v1/chat/completions?api-version=…; the fake answers 400 to any other
// query.
func TestBaseURLWithAQueryIsJoinedOnItsPathAndTheQueryKept(t *testing.T) {
	const query = "api-version=2024-10-21"
	up := testutil.NewUpstream(t)
	up.RequireQuery(query)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "CHAT,EMBEDDING", "CHAT__SOURCES": "az", "CHAT__AZ__BASE_URL": up.URL + "?" + query,
		"EMBEDDING__SOURCES": "az", "EMBEDDING__AZ__BASE_URL": up.URL + "/?" + query,
	})
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)
	assert.Equal(t, "/v1/chat/completions", up.LastRequest(testutil.Chat).Path)
	assert.Equal(t, query, up.LastQuery())

	_, err = gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	assert.Equal(t, "/v1/embeddings", up.LastRequest(testutil.Embeddings).Path)
	assert.Equal(t, query, up.LastQuery())
}

// TestUpstreamErrorNamesScopeSourceAndPathButNotTheQuery: a 404 (BASE_URL
// missing /v1) ends the call with an HTTPError that says where it came
// from; the query, which may carry a key, is printed nowhere — not in the
// error, not in the logs.
func TestUpstreamErrorNamesScopeSourceAndPathButNotTheQuery(t *testing.T) {
	const secret = "sk-QUERY-MARKER"
	up := testutil.NewUpstream(t)
	var logs bytes.Buffer
	s := mustSettings(t, map[string]string{
		"CHAT__SOURCES": "primary", "CHAT__PRIMARY__BASE_URL": up.URL[:len(up.URL)-len("/v1")] + "?key=" + secret,
	})
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	defer gw.Close()
	_, err = gw.Chat(context.Background(), hello())
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 404, he.StatusCode)
	assert.Equal(t, "CHAT", he.Scope)
	assert.Equal(t, "primary", he.Source)
	assert.Equal(t, "/chat/completions", he.Path)
	assert.Contains(t, err.Error(), "upstream http 404 from scope CHAT, source primary, path /chat/completions")
	assert.NotContains(t, err.Error(), secret)
	assert.NotContains(t, logs.String(), secret)
}

// mustSettings reads env-style keys into Settings.
func mustSettings(t *testing.T, env map[string]string) *pgw.Settings {
	t.Helper()
	s, err := config.FromMap(env)
	require.NoError(t, err)
	return s
}
