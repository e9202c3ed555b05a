package main

// openai-go's errors inside the example's CallStream, before the first
// chunk: a 400 is the request's fault, returned at once with the SDK's own
// error reachable by errors.As; a 401 opens the source's breaker and fails
// over; a 429's Retry-After holds the source off.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

func TestStreamViaCallStreamBadRequestIsTheSDKsErrorAtOnce(t *testing.T) {
	r := newGovRig(t, wire.Events(settleStream()...), nil)
	r.primary.Next(wire.JSON(400, openAIError("invalid_value", "bad messages")))
	_, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.Error(t, err)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "errors.As reaches openai-go's error: %v", err)
	assert.Equal(t, 400, apiErr.StatusCode)
	assert.Equal(t, "invalid_value", apiErr.Code)
	assert.Equal(t, 0, r.backup.Count(), "a bad request is not sent to the backup")
	assert.Equal(t, 0, wire.State(t, r.gw, "CHAT", "primary").ConsecutiveFailures)
}

func TestStreamViaCallStreamUnauthorizedOpensTheBreaker(t *testing.T) {
	r := newGovRig(t, wire.Events(settleStream()...), nil)
	r.primary.Next(wire.JSON(401, openAIError("invalid_api_key", "bad key")))
	got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	assert.Equal(t, pgw.StateOpen, wire.State(t, r.gw, "CHAT", "primary").State)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFatal, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
}

func TestStreamViaCallStreamRetryAfterHoldsTheSourceOff(t *testing.T) {
	r := newGovRig(t, wire.Events(settleStream()...), nil)
	r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow down"), "Retry-After", "30"))
	_, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.NoError(t, err)
	att := r.rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, 30*time.Second, att[0].RetryAfter)
	_, err = StreamViaCallStream(context.Background(), r.gw, "hello")
	require.NoError(t, err)
	assert.Equal(t, 1, r.primary.Count(), "held off: the next call goes to the backup")
	assert.Equal(t, 2, r.backup.Count())
}

// A 429 whose rate-limit headers say the request window is spent, met by
// the SDK's stream inside CallStream: the headers the SDK's error carries
// reach the source's advertised budget, as they do inside pgw.Call, and
// hold the source to the window's reset.
func TestStreamViaCallStreamSpentWindowHoldsTheSourceToItsReset(t *testing.T) {
	r := newGovRig(t, wire.Events(settleStream()...), nil)
	r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow"),
		"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "40s"))
	for i := range 3 {
		got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "Hello there", got, "call %d", i)
	}
	assert.Equal(t, 1, r.primary.Count(), "held to the window's reset")
	assert.Equal(t, 3, r.backup.Count())
	snap, err := r.gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised, "the SDK error's headers reached the budget")
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
}
