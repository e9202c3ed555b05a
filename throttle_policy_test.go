package pgw_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A 429 with Retry-After on a single-source scope is a throttle, governed by
// QUOTA_FULL and not by CIRCUIT_OPEN: under the default CIRCUIT_OPEN=fail_fast
// the call waits it out (QUOTA_FULL=wait, the default) and never ends with a
// *CircuitOpenError.
func TestRetryAfterUnderCircuitOpenFailFastIsGovernedByQuotaFull(t *testing.T) {
	t.Run("quota_full=wait waits it out", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "0.2"})
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":            "CHAT",
			"CHAT__SOURCES":         "solo",
			"CHAT__SOLO__BASE_URL":  up.URL,
			"CHAT__POLL_INTERVAL_S": "0.01",
		})
		resp, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err, "CIRCUIT_OPEN=fail_fast does not govern a throttle")
		assert.Equal(t, testutil.DefaultAnswer, resp.Content)
		assert.Equal(t, 2, up.Requests(testutil.Chat))
	})
	t.Run("quota_full=fail_fast ends with AllSourcesExhausted", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "30"})
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":            "CHAT",
			"CHAT__SOURCES":         "solo",
			"CHAT__SOLO__BASE_URL":  up.URL,
			"CHAT__QUOTA_FULL":      "fail_fast",
			"CHAT__POLL_INTERVAL_S": "0.01",
		})
		_, err := gw.Chat(context.Background(), hello())
		var coe *pgw.CircuitOpenError
		assert.False(t, errors.As(err, &coe), "a throttle is not an open circuit: %v", err)
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.Equal(t, map[string]string{"solo": "retry_after"}, ase.Reasons)
		assert.InDelta(t, 30, ase.RetryAfter.Seconds(), 2)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the 429 is reachable")
		assert.Equal(t, http.StatusTooManyRequests, he.StatusCode)
		assert.Equal(t, 1, up.Requests(testutil.Chat))
	})
}
