package pgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// marker is planted in every secret-bearing key; it must show nowhere.
const marker = "MRKsecret7Q"

// secretForms are the values of each secret-bearing key the marker test
// plants, valid and invalid: an API key, the Redis URL (password, user,
// query; a mistyped scheme; a bad database; unparseable), a BASE_URL's user
// info and query, and a mistyped key name holding a key.
func secretForms(upstream string) []map[string]string {
	base := func(kv ...string) map[string]string {
		env := map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": upstream}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	return []map[string]string{
		base("CHAT__A__API_KEY", marker),
		base("CHAT__A__API_KEY", marker+"\n"),
		base("CHAT__A__API_KEY", " "+marker),
		base("CHAT__A__API_KY", marker),
		base("chat__a__api_key", marker),
		base("CHAT__B__API_KEY", marker),
		base("OCR__X__API_KEY", marker),
		base("PGW_BREAKER_BACKEND", "redis", "PGW_REDIS_URL", "redis://:"+marker+"@127.0.0.1:1/0?dial_timeout=50ms"),
		base("PGW_BREAKER_BACKEND", "redis", "PGW_REDIS_URL", "redis://"+marker+":"+marker+"@127.0.0.1:1/0?dial_timeout=50ms"),
		base("PGW_REDIS_URL", "redis//:"+marker+"@127.0.0.1:6379/0"),
		base("PGW_REDIS_URL", "redis:/:"+marker+"@h/0"),
		base("PGW_REDIS_URL", "redis:"+marker+"@h"),
		base("PGW_REDIS_URL", "redis://:"+marker+"@h:6379/zero"),
		base("PGW_REDIS_URL", "redis://:"+marker+"@[::1"),
		base("PGW_REDIS_URL", "redis://h/0?password="+marker),
		base("PGW_REDIS_URL", marker),
		base("PGW_REDIS_URLL", "redis://:"+marker+"@h/0"),
		base("CHAT__A__BASE_URL", upstream+"?api-key="+marker),
		base("CHAT__A__BASE_URL", strings.Replace(upstream, "://", "://u:"+marker+"@", 1)),
		base("CHAT__A__BASE_URL", strings.Replace(upstream, "://", "//u:"+marker+"@", 1)),
		base("CHAT__A__BASE_URL", upstream+"?key="+marker+"#frag"),
	}
}

// requireNoMarker fails when the marker shows in any of the renderings of v.
func requireNoMarker(t *testing.T, what string, v any) {
	t.Helper()
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		outs = append(outs, fmt.Sprintf(verb, v))
	}
	if b, err := json.Marshal(v); err == nil {
		outs = append(outs, string(b))
	}
	var sb strings.Builder
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "v", v)
	outs = append(outs, sb.String())
	for _, o := range outs {
		require.NotContains(t, o, marker, "%s", what)
	}
}

// TestNoSecretInAnyMessage plants the marker in every secret-bearing key, in
// valid and invalid forms, and asserts it appears in no error (any fmt verb,
// JSON, slog), no log line of a gateway built and called with it, and none of
// the printed settings.
func TestNoSecretInAnyMessage(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.RequireAPIKey("the-right-key") // a 401 that echoes the key it was sent
	for i, env := range secretForms(up.URL) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			s, err := config.FromMap(env)
			if err != nil {
				requireNoMarker(t, "FromMap error", err)
			} else {
				requireNoMarker(t, "settings", s)
				requireNoMarker(t, "scope", s.Scopes[0])
				requireNoMarker(t, "source", s.Scopes[0].Sources[0])
			}
			_, err = config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			requireNoMarker(t, "FromLookup error", err)

			for k, v := range env {
				t.Setenv(k, v)
			}
			logs := &syncBuffer{}
			l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			gw, err := pgw.NewFromEnv(ctx, pgw.WithLogger(l), fastBackoff)
			requireNoMarker(t, "NewFromEnv error", err)
			if err == nil {
				_, err = gw.Chat(ctx, hello())
				requireNoMarker(t, "Chat error", err)
				_, err = gw.ChatStream(ctx, hello())
				requireNoMarker(t, "ChatStream error", err)
				snap, err := gw.Snapshot(ctx, "CHAT", "a")
				requireNoMarker(t, "Snapshot", snap)
				requireNoMarker(t, "Snapshot error", err)
				require.NoError(t, gw.Close())
			}
			require.NotContains(t, logs.String(), marker, "logs")
		})
	}
}

// A Call function's error may quote what it sent — the SDK's request URL
// with the source's query, an echoed header with its key. The attempt's
// Debug log line shows neither; nor does the error the caller gets, whose
// HTTPError keeps its status and the rest of its Message.
func TestACallFunctionsErrorIsLoggedWithoutTheSourcesCredentials(t *testing.T) {
	const key, token = "sk-live-0123456789", "tok-9876543210"
	up := testutil.NewUpstream(t)
	logs := &syncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": up.URL + "/v1?api-version=2024-10-21&token=" + token,
		"CHAT__A__API_KEY":  key,
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(l), fastBackoff)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	sdkErr := fmt.Errorf(`POST "%s/v1/chat/completions?api-version=2024-10-21&token=%s": 401 Unauthorized: invalid key %s`, up.URL, token, key)
	_, err = pgw.Call(context.Background(), gw, "CHAT", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: 401, Message: sdkErr.Error()}
	})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, err.Error(), token)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 401, he.StatusCode)
	assert.Contains(t, he.Message, "401 Unauthorized: invalid key [redacted]")
	require.Contains(t, logs.String(), "pgw: attempt", "the attempt was logged")
	assert.NotContains(t, logs.String(), key)
	assert.NotContains(t, logs.String(), token)
	assert.Contains(t, logs.String(), "2024-10-21", "api-version is not a credential")
}
