package pgw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestTheDebugAttemptLineNamesTheStatusAndTheRetryAfter: the Debug line of
// an attempt an upstream refused carries the HTTP status and, for a 429
// with Retry-After, that wait under the key the wait lines use
// (retry_after); a delivered attempt has neither.
func TestTheDebugAttemptLineNamesTheStatusAndTheRetryAfter(t *testing.T) {
	primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "7"})
	logs := &testutil.LogBuffer{}
	l := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__PRIORITY":  "1",
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(l), fastBackoff)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)

	bySource := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line["msg"] == "pgw: attempt" {
			bySource[line["source"].(string)] = line
		}
	}
	require.Contains(t, bySource, "primary")
	require.Contains(t, bySource, "backup")
	assert.Equal(t, "throttle", bySource["primary"]["outcome"])
	assert.EqualValues(t, 429, bySource["primary"]["status"])
	assert.EqualValues(t, 7e9, bySource["primary"]["retry_after"], "slog's JSON writes a duration in nanoseconds")
	assert.Equal(t, "success", bySource["backup"]["outcome"])
	assert.NotContains(t, bySource["backup"], "status")
	assert.NotContains(t, bySource["backup"], "retry_after")
}
