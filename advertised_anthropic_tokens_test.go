package pgw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Anthropic answers with a combined tokens window beside its input- and
// output-token windows. pgw's token estimate of a call is its prompt plus
// its MaxTokens, so the budget reserves it against the combined window
// (anthropic-ratelimit-tokens-*), not against the output window alone,
// which would refuse calls the upstream still has room for: here ten calls
// of ~4,000 estimated tokens each, while the upstream keeps saying 95,000
// tokens, 15,000 output tokens and 999 requests are left.
func TestAnthropicCallsReserveAgainstTheCombinedTokensWindow(t *testing.T) {
	up := testutil.NewUpstream(t)
	reset := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	adv := newAdvertiser(t, up, headers(
		"anthropic-ratelimit-requests-limit", "1000", "anthropic-ratelimit-requests-remaining", "999",
		"anthropic-ratelimit-requests-reset", reset,
		"anthropic-ratelimit-tokens-limit", "96000", "anthropic-ratelimit-tokens-remaining", "95000",
		"anthropic-ratelimit-tokens-reset", reset,
		"anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-input-tokens-remaining", "80000",
		"anthropic-ratelimit-input-tokens-reset", reset,
		"anthropic-ratelimit-output-tokens-limit", "16000", "anthropic-ratelimit-output-tokens-remaining", "15000",
		"anthropic-ratelimit-output-tokens-reset", reset,
	))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "claude",
		"CHAT__CLAUDE__BASE_URL": adv.URL,
		"CHAT__CLAUDE__MODEL":    "claude-sonnet-4-5",
		"CHAT__CLAUDE__PROVIDER": "anthropic",
		"CHAT__QUOTA_FULL":       "fail_fast",
	})
	const calls = 10
	for i := range calls {
		req := hello()
		req.MaxTokens = 4000
		_, err := gw.Chat(context.Background(), req)
		require.NoError(t, err, "call %d: the upstream still has room", i)
	}
	assert.Equal(t, int64(calls), adv.hits.Load())
	snap, err := gw.Snapshot(context.Background(), pgw.ScopeChat, "claude")
	require.NoError(t, err)
	if assert.NotNil(t, snap.Advertised) {
		assert.Equal(t, int64(96000), snap.Advertised.Tokens.Limit, "the combined window")
	}
}
