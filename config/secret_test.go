package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
)

const apiKey = "sk-live-0123456789abcdef"

func sourceWithKey() config.Source {
	return config.Source{Name: "eu-1", BaseURL: "https://api.example.com/v1", APIKey: config.NewSecret(apiKey), Model: "m"}
}

func TestSecretNeverPrintedByFmt(t *testing.T) {
	src := sourceWithKey()
	type holder struct {
		src  config.Source // unexported: fmt cannot call methods on it
		Srcs []config.Source
	}
	h := &holder{src: src, Srcs: []config.Source{src}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%T %v"} {
		for name, arg := range map[string]any{
			"secret": src.APIKey, "source": src, "pointer": &src, "holder": h,
			"settings": config.Settings{Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{src}}}},
		} {
			out := fmt.Sprintf(verb, arg)
			assert.NotContains(t, out, apiKey, "%s with %s", name, verb)
			assert.NotContains(t, out, "0123456789", "%s with %s", name, verb)
		}
	}
	assert.Equal(t, config.Redacted, fmt.Sprint(src.APIKey))
	assert.Equal(t, `config.NewSecret("<redacted>")`, fmt.Sprintf("%#v", src.APIKey))
	assert.Equal(t, `"<redacted>"`, fmt.Sprintf("%q", src.APIKey))
}

func TestSecretNeverLoggedBySlog(t *testing.T) {
	src := sourceWithKey()
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		log := slog.New(h)
		log.Info("calling", "key", src.APIKey, "source", src, "ptr", &src)
		log.Info("calling", slog.Any("source", src), slog.Group("g", "key", src.APIKey))
	}
	require.NotEmpty(t, buf.String())
	assert.NotContains(t, buf.String(), apiKey)
	assert.Contains(t, buf.String(), config.Redacted)
}

func TestSecretNeverMarshalledToJSON(t *testing.T) {
	b, err := json.Marshal(sourceWithKey())
	require.NoError(t, err)
	assert.NotContains(t, string(b), apiKey)
	assert.Contains(t, string(b), `"APIKey":"\u003credacted\u003e"`)
}

func TestSecretRevealAndEmpty(t *testing.T) {
	s := config.NewSecret(apiKey)
	assert.Equal(t, apiKey, s.Reveal())
	assert.True(t, s.IsSet())

	var zero config.Secret
	assert.Equal(t, "", zero.Reveal())
	assert.False(t, zero.IsSet())
	assert.Equal(t, "", fmt.Sprint(zero), "an empty secret shows as empty, not as redacted")
	assert.Equal(t, "config.Secret{}", fmt.Sprintf("%#v", zero))
	assert.Equal(t, zero, config.NewSecret(""))
}
