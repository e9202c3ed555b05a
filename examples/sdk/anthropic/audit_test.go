package main

// anthropic-sdk-go called inside pgw.Call, on each source's own BASE_URL
// and key, with no mapping code: pgw classifies the SDK's *anthropic.Error
// from the response it carries.

import (
	"context"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// callSDK asks the source pgw picks, through a plain anthropic-sdk-go client.
func callSDK(r *govRig) (string, error) {
	return pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		c := anthropic.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0))
		answer, err := Ask(ctx, c, "hello")
		return answer, pgw.Usage{}, err
	})
}

// A 429 with Retry-After holds the source off and fails over at once (the
// next call does not ask it again), a 401 opens its breaker, a 400 comes
// back at once as the SDK's *anthropic.Error and the backup is not asked.
func TestAnthropicSDKInsideCallErrorsAreClassified(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, message), nil)
	r.primary.Next(wire.JSON(429, anthropicError("rate_limit_error", "slow down"), "Retry-After", "30"))
	got, err := callSDK(r)
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	att := r.rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, 30*time.Second, att[0].RetryAfter)
	assert.Equal(t, pgw.StateClosed, wire.State(t, r.gw, "CHAT", "primary").State, "a throttle is no breaker failure")
	_, err = callSDK(r)
	require.NoError(t, err)
	assert.Equal(t, 1, r.primary.Count(), "held off for its Retry-After")
	assert.Equal(t, 2, r.backup.Count())

	r2 := newGovRig(t, wire.JSON(200, message), nil)
	r2.primary.Next(wire.JSON(401, anthropicError("authentication_error", "invalid x-api-key")))
	_, err = callSDK(r2)
	require.NoError(t, err)
	assert.Equal(t, 1, r2.backup.Count())
	assert.Equal(t, pgw.StateOpen, wire.State(t, r2.gw, "CHAT", "primary").State)

	r3 := newGovRig(t, wire.JSON(400, anthropicError("invalid_request_error", "prompt is too long")), nil)
	_, err = callSDK(r3)
	var ae *anthropic.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 400, ae.StatusCode)
	assert.Equal(t, 1, r3.primary.Count())
	assert.Equal(t, 0, r3.backup.Count(), "a bad request is not re-sent to the backup")
	assert.Equal(t, pgw.StateClosed, wire.State(t, r3.gw, "CHAT", "primary").State)
	assert.Zero(t, wire.State(t, r3.gw, "CHAT", "primary").ConsecutiveFailures)
}
