package pgw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// A Call function's own *pgw.HTTPError whose message names a code that
// says the quota or credit is spent — any of them, not only
// insufficient_quota — is fatal whatever its status: the breaker opens at
// once and the call fails over, as for a 429 insufficient_quota.
func TestCallHTTPErrorNamingABillingCodeIsFatal(t *testing.T) {
	for _, code := range []string{"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_too_low"} {
		t.Run(code, func(t *testing.T) {
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":                "RERANK",
				"RERANK__SOURCES":           "primary,backup",
				"RERANK__FAILURE_THRESHOLD": "5",
				"RERANK__BACKUP__PRIORITY":  "1",
			})
			got, err := pgw.Call(context.Background(), gw, "RERANK", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
				if src.Name == "primary" {
					return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusTooManyRequests, Message: "the account is out of credit (" + code + ")"}
				}
				return "ranked by " + src.Name, pgw.Usage{}, nil
			})
			require.NoError(t, err)
			assert.Equal(t, "ranked by backup", got)
			assert.Equal(t, []string{"primary:fatal", "backup:success"}, rec.Outcomes())
			snap, err := gw.Snapshot(context.Background(), "RERANK", "primary")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateOpen, snap.State, "a spent quota opens the breaker at once")
		})
	}
}
