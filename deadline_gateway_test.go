package pgw_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The case a new user met: CIRCUIT_OPEN=wait, a 60 s cooldown ahead and a
// 2 s deadline. The call ends at once with *CircuitOpenError and the time
// left, not with context.DeadlineExceeded after sleeping.
func TestCircuitOpenWaitWithACooldownPastTheDeadlineFailsAtOnce(t *testing.T) {
	env, up := singleSource(t, "wait", "60")
	gw, _ := newGateway(t, env)
	for i := range 2 {
		// The first call's 503 opens the breaker; the second call finds
		// it open.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, ctx.Err(), "call %d did not sleep into its deadline", i)
		cancel()
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "call %d", i)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.InDelta(t, 60, coe.RetryAfter.Seconds(), 2)
	}
	assert.Equal(t, 1, up.Requests(testutil.Chat))
}

// An upstream's Retry-After that ends after the caller's deadline ends a
// QUOTA_FULL=wait call at once with the quota error and that wait.
func TestRetryAfterPastTheDeadlineFailsAtOnce(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "120"})
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  up.URL,
		"CHAT__QUOTA_FULL":      "wait",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := gw.Chat(ctx, hello())
	require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.Equal(t, "retry_after", ase.Reasons["solo"])
	assert.InDelta(t, 120, ase.RetryAfter.Seconds(), 2)
	assert.Equal(t, 1, up.Requests(testutil.Chat))
}

// A certain wait longer than the stall window ends at once too, with no
// deadline on the caller's ctx.
func TestAdvertisedResetPastTheStallWindowFailsAtOnce(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("2m0s"))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  adv.URL,
		"CHAT__QUOTA_FULL":      "wait",
		"CHAT__STALL_WINDOW_S":  "30",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	_, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = gw.Chat(ctx, hello())
	require.NoError(t, ctx.Err(), "the call did not wait")
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason, "fail_fast's error, not stalled")
	assert.InDelta(t, 120, ase.RetryAfter.Seconds(), 2)
}

// Through the governed HTTPClient, a wait past the request's deadline is a
// verdict at once: pgw's 424 with the Retry-After, before the deadline.
func TestHTTPClientWaitPastTheDeadlineIsAVerdictAtOnce(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("1m0s"))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  adv.URL,
		"CHAT__QUOTA_FULL":      "wait",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	hc := gw.HTTPClient("CHAT")
	readBody(t, post(t, hc, "chat/completions", chatBody(false)))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(false)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body := readBody(t, resp)
	require.NoError(t, ctx.Err())
	assert.Equal(t, http.StatusFailedDependency, resp.StatusCode, body)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, int64(1), adv.hits.Load())
}
