package pgw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// A chat request without a model to an Anthropic source without MODEL is
// sent — not refused before admission — and without a "model" key, so that
// the upstream's own error says what is missing; with a MODEL, that model
// is sent.
func TestAnthropicRequestWithoutAModelSendsNoModelKey(t *testing.T) {
	missing := jsonReply(http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"model: Field required"}}`)
	for name, model := range map[string]string{"no MODEL": "", "a MODEL": "claude-sonnet-4-5"} {
		t.Run(name, func(t *testing.T) {
			ws := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "hi")...)))
			if model == "" {
				ws.script(missing)
			}
			env := map[string]string{
				"PGW_SCOPES":               "CHAT",
				"CHAT__SOURCES":            "claude",
				"CHAT__CLAUDE__PROVIDER":   "anthropic",
				"CHAT__CLAUDE__BASE_URL":   ws.URL,
				"CHAT__CLAUDE__MAX_TOKENS": "300",
			}
			if model != "" {
				env["CHAT__CLAUDE__MODEL"] = model
			}
			gw, _ := newGateway(t, env)
			_, err := gw.Chat(context.Background(), hello())
			var sent map[string]any
			ws.last(t, &sent)
			if model == "" {
				assert.NotContains(t, sent, "model", "no model is sent as no model, not as \"\"")
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, http.StatusBadRequest, he.StatusCode)
				assert.Contains(t, he.Message, "model: Field required", "the upstream says what is missing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, model, sent["model"])
		})
	}
}
