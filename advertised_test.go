package pgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/gate"
)

// advertisingUpstream answers embeddings and advertises left of 60
// requests, resetting in 30 s.
func advertisingUpstream(t *testing.T, left *atomic.Int64, calls *atomic.Int64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("x-ratelimit-limit-requests", "60")
		w.Header().Set("x-ratelimit-remaining-requests", strconv.FormatInt(left.Load(), 10))
		w.Header().Set("x-ratelimit-reset-requests", "30s")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestGatewayStopsBeforeThe429WhenTheAdvertisedBudgetIsSpent: an answer
// that says nothing is left keeps the next call from the upstream; the
// Snapshot shows the configured and the advertised limits side by side.
func TestGatewayStopsBeforeThe429WhenTheAdvertisedBudgetIsSpent(t *testing.T) {
	var left, calls atomic.Int64
	url := advertisingUpstream(t, &left, &calls)
	gw, _ := newGateway(t, map[string]string{
		"EMBEDDING__SOURCES":         "up",
		"EMBEDDING__UP__BASE_URL":    url,
		"EMBEDDING__UP__MODEL":       "m",
		"EMBEDDING__UP__RPM":         "100",
		"EMBEDDING__QUOTA_FULL":      "fail_fast",
		"EMBEDDING__POLL_INTERVAL_S": "0.01",
	})
	ctx := context.Background()
	_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)

	snap, err := gw.Snapshot(ctx, "EMBEDDING", "up")
	require.NoError(t, err)
	assert.Equal(t, gate.Limits{RPM: 100}, snap.Configured)
	require.NotNil(t, snap.Advertised)
	assert.Equal(t, int64(60), snap.Advertised.Requests.Limit)
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
	assert.InDelta(t, 30, snap.Advertised.Requests.Reset.Seconds(), 1)

	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, "quota_exhausted", ase.Reason)
	assert.InDelta(t, 30, ase.RetryAfter.Seconds(), 1)
	assert.Equal(t, int64(1), calls.Load(), "the upstream was not called again")
}

// TestLimitsFromHeadersReplaceTheConfiguredRPM: with LIMITS_FROM_HEADERS the
// configured RPM no longer holds calls back; the advertised budget does.
func TestLimitsFromHeadersReplaceTheConfiguredRPM(t *testing.T) {
	var left, calls atomic.Int64
	left.Store(50)
	url := advertisingUpstream(t, &left, &calls)
	env := map[string]string{
		"EMBEDDING__SOURCES":      "up",
		"EMBEDDING__UP__BASE_URL": url,
		"EMBEDDING__UP__MODEL":    "m",
		"EMBEDDING__UP__RPM":      "1",
		"EMBEDDING__QUOTA_FULL":   "fail_fast",
	}
	gw, _ := newGateway(t, env)
	ctx := context.Background()
	_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.Error(t, err, "RPM 1 holds the second call back")

	env["EMBEDDING__UP__LIMITS_FROM_HEADERS"] = "true"
	gw, _ = newGateway(t, env)
	for range 5 {
		_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
		require.NoError(t, err, "the advertised 50 left replace RPM 1")
	}
	snap, err := gw.Snapshot(ctx, "EMBEDDING", "up")
	require.NoError(t, err)
	assert.Equal(t, gate.Limits{RPM: 1}, snap.Configured, "the configured limit is still shown")
}

// TestHedgedAttemptsReadTheAdvertisedBudget: a hedge that wins reports the
// budget its upstream advertised, as an attempt that runs alone does.
func TestHedgedAttemptsReadTheAdvertisedBudget(t *testing.T) {
	var left, calls atomic.Int64
	left.Store(50)
	url := advertisingUpstream(t, &left, &calls)
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(stop) })
	gw, rec := newGateway(t, map[string]string{
		"EMBEDDING__SOURCES":         "slow,up",
		"EMBEDDING__HEDGE_AFTER_S":   "0.01",
		"EMBEDDING__SLOW__BASE_URL":  slow.URL + "/v1",
		"EMBEDDING__SLOW__MODEL":     "m",
		"EMBEDDING__SLOW__PRIORITY":  "0",
		"EMBEDDING__UP__BASE_URL":    url,
		"EMBEDDING__UP__MODEL":       "m",
		"EMBEDDING__UP__RPM":         "100",
		"EMBEDDING__UP__PRIORITY":    "1",
		"EMBEDDING__POLL_INTERVAL_S": "0.01",
	})
	ctx := context.Background()
	_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	assert.Contains(t, rec.Outcomes(), "up:success")

	snap, err := gw.Snapshot(ctx, "EMBEDDING", "up")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised, "the hedge's answer was read")
	assert.Equal(t, int64(50), snap.Advertised.Requests.Remaining)
	require.Eventually(t, func() bool { return len(rec.Outcomes()) == 2 }, 5*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"slow:hedge_lost", "up:success"}, rec.Outcomes())
}
