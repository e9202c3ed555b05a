package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// logBuffer keeps what the gateway logs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// anthropic-sdk-go inside pgw.Call, on a source whose BASE_URL's query
// holds a token, against an upstream whose error echoes the request's key
// and URL: the SDK's error text shows both (its URL, then the raw body),
// but the error pgw returns, the observer's records and the logs show
// neither, and errors.As still reaches the SDK's *anthropic.Error.
func TestAnthropicSDKErrorInsideCallShowsNoCredential(t *testing.T) {
	const key, token = "sk-ant-secret-0123456789", "tok-0123456789abcdef"
	up := wire.Start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"unknown model for key %s at %s"}}`,
			r.Header.Get("X-Api-Key")+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.URL.RawQuery)
	})
	rec := &wire.Recorder{}
	logs := &logBuffer{}
	gw := wire.Gateway(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a",
		"CHAT__MAX_ATTEMPTS": "1",
		"CHAT__A__PROVIDER":  "anthropic",
		"CHAT__A__BASE_URL":  up.URL + "/?token=" + token,
		"CHAT__A__API_KEY":   key,
	}, rec, pgw.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))

	_, err := pgw.Call(context.Background(), gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		client := anthropic.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()),
			option.WithMaxRetries(0), option.WithQuery("token", token))
		answer, err := Ask(ctx, client, "hello")
		return answer, pgw.Usage{}, err
	})
	require.Error(t, err)
	var aerr *anthropic.Error
	require.ErrorAs(t, err, &aerr, "errors.As reaches the SDK's own error")
	require.Contains(t, aerr.Error(), key, "the SDK's own text shows the echo")
	require.Contains(t, aerr.Error(), token)

	assert.Contains(t, err.Error(), "/v1/messages")
	assert.Contains(t, err.Error(), "400 Bad Request")
	assert.Contains(t, err.Error(), "unknown model for key [redacted]")
	for _, secret := range []string{key, token} {
		assert.NotContains(t, err.Error(), secret)
		assert.NotContains(t, fmt.Sprintf("%+v", err), secret)
		for _, a := range rec.Attempts() {
			require.Error(t, a.Err)
			assert.NotContains(t, a.Err.Error(), secret)
		}
		for _, c := range rec.Calls() {
			require.Error(t, c.Err)
			assert.NotContains(t, c.Err.Error(), secret)
		}
		assert.NotContains(t, logs.String(), secret)
	}
}
