package main

// openai-go called inside pgw.Call, on each source's own BASE_URL and key:
// pgw classifies the SDK's errors from the response they carry.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
	"github.com/pgw-go/pgw/transport"
)

// callSDK asks the source pgw picks, through a plain openai-go client.
func callSDK(r *govRig) (string, error) {
	return pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		c := openai.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0))
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err != nil {
			return "", pgw.Usage{}, err
		}
		return resp.Choices[0].Message.Content, pgw.Usage{}, nil
	})
}

// A 429 with retry-after-ms throttles and fails over, a 403 opens the
// breaker, a 400 comes back at once as the SDK's *openai.Error.
func TestOpenAIGoInsideCallErrorsAreClassified(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow"), "retry-after-ms", "45000"))
	got, err := callSDK(r)
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	att := r.rec.Attempts()
	require.NotEmpty(t, att)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, 45*time.Second, att[0].RetryAfter)

	r2 := newGovRig(t, wire.JSON(200, completion), nil)
	r2.primary.Next(wire.JSON(403, openAIError("x", "no")))
	_, err = callSDK(r2)
	require.NoError(t, err)
	assert.Equal(t, 1, r2.backup.Count())
	assert.Equal(t, pgw.StateOpen, wire.State(t, r2.gw, "CHAT", "primary").State)

	r3 := newGovRig(t, wire.JSON(400, openAIError("bad", "context too long")), nil)
	_, err = callSDK(r3)
	var ae *openai.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 400, ae.StatusCode)
	assert.Equal(t, "context too long", ae.Message)
	assert.Equal(t, 0, r3.backup.Count())
}

// openai-go's 429 without Retry-After whose rate-limit headers say the
// request window is spent holds the source to that window's reset inside
// pgw.Call: this call and the next go to the backup, and the primary is
// not asked again before the reset.
func TestOpenAIGoInsideCallSpentWindowHoldsTheSourceToItsReset(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion), nil)
	r.primary.Next(wire.JSON(429, openAIError("rate_limit_exceeded", "slow"),
		"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "40s"))
	for i := range 3 {
		got, err := callSDK(r)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "hi", got, "call %d", i)
	}
	assert.Equal(t, 1, r.primary.Count(), "held to the window's reset")
	assert.Equal(t, 3, r.backup.Count())
	snap, err := r.gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised, "the SDK error's headers reached the budget")
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
	assert.InDelta(t, 40, snap.Advertised.Requests.Reset.Seconds(), 3)
}

// observeAnswers is openai-go middleware that reports every answer's status
// and headers to pgw (transport.ObserveResponse, on the ctx pgw.Call gave
// the function), so that a success's rate-limit headers reach the budget
// too, not only those of an error.
func observeAnswers(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if resp != nil {
		transport.ObserveResponse(req.Context(), resp.StatusCode, resp.Header)
	}
	return resp, err
}

// With the middleware, a 200 that says the request window is spent holds
// the source to its reset: the next calls go to the backup without asking
// it. Without the middleware, nothing of a success reaches pgw.
func TestOpenAIGoInsideCallMiddlewareReportsASuccessHeaders(t *testing.T) {
	for _, withMiddleware := range []bool{true, false} {
		r := newGovRig(t, wire.JSON(200, completion), nil)
		r.primary.Next(wire.JSON(200, completion,
			"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "40s"))
		call := func() (string, error) {
			return pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
				opts := []option.RequestOption{option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0)}
				if withMiddleware {
					opts = append(opts, option.WithMiddleware(observeAnswers))
				}
				c := openai.NewClient(opts...)
				resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				})
				if err != nil {
					return "", pgw.Usage{}, err
				}
				return resp.Choices[0].Message.Content, pgw.Usage{}, nil
			})
		}
		for i := range 3 {
			got, err := call()
			require.NoError(t, err, "call %d", i)
			assert.Equal(t, "hi", got)
		}
		if withMiddleware {
			assert.Equal(t, 1, r.primary.Count(), "held to the window's reset after its 200")
			assert.Equal(t, 2, r.backup.Count())
		} else {
			assert.Equal(t, 3, r.primary.Count(), "a success's headers never reached pgw")
		}
	}
}
