package otel_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// Each way a call fails puts its own pgw.result on the call's span, as its
// error.type, with an error status: every attempt failed (unavailable), a
// fail-fast scope whose only source is open (circuit_open), a fail-fast
// scope whose only source has no slot (quota_exhausted), and a request the
// upstream refused (caller_error).
func TestEachFailedResultIsTheCallSpansErrorType(t *testing.T) {
	one := func(up *testutil.Upstream, extra map[string]string) map[string]string {
		env := map[string]string{
			"PGW_SCOPES":           "CHAT",
			"CHAT__SOURCES":        "solo",
			"CHAT__SOLO__BASE_URL": up.URL,
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	lastCall := func(t *testing.T, r *rig) map[string]any {
		t.Helper()
		calls := r.ended()[pgwotel.SpanCall]
		require.NotEmpty(t, calls)
		c := calls[len(calls)-1]
		assert.Equal(t, codes.Error, c.Status.Code)
		return attrs(c.Attributes)
	}
	ctx := context.Background()

	t.Run("unavailable", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
		r := newRig(t, one(up, map[string]string{"CHAT__MAX_ATTEMPTS": "2", "CHAT__FAILURE_THRESHOLD": "100"}))
		_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
		var gue *pgw.GatewayUnavailableError
		require.ErrorAs(t, err, &gue)
		a := lastCall(t, r)
		assert.Equal(t, pgw.ResultUnavailable, a["pgw.result"])
		assert.Equal(t, pgw.ResultUnavailable, a["error.type"])
		assert.EqualValues(t, 2, a["pgw.attempts"])
		assert.Equal(t, "solo", a["pgw.source"])
	})
	t.Run("circuit_open", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusUnauthorized})
		r := newRig(t, one(up, map[string]string{"CHAT__CIRCUIT_OPEN": "fail_fast", "CHAT__COOLDOWN_S": "600"}))
		_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello}) // a 401 opens the breaker at once
		require.Error(t, err)
		_, err = r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe)
		a := lastCall(t, r)
		assert.Equal(t, pgw.ResultCircuitOpen, a["pgw.result"])
		assert.Equal(t, pgw.ResultCircuitOpen, a["error.type"])
		assert.EqualValues(t, 0, a["pgw.attempts"])
	})
	t.Run("quota_exhausted", func(t *testing.T) {
		r, st := slotHeld(t, map[string]string{"CHAT__QUOTA_FULL": "fail_fast"})
		_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		a := lastCall(t, r)
		require.NoError(t, st.Close())
		assert.Equal(t, pgw.ResultQuotaExhausted, a["pgw.result"])
		assert.Equal(t, pgw.ResultQuotaExhausted, a["error.type"])
	})
	t.Run("caller_error", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusBadRequest})
		r := newRig(t, one(up, nil))
		_, err := r.gw.Chat(ctx, pgw.ChatRequest{Messages: hello})
		require.Error(t, err)
		a := lastCall(t, r)
		assert.Equal(t, pgw.ResultCallerError, a["pgw.result"])
		assert.Equal(t, pgw.ResultCallerError, a["error.type"])
		att := r.ended()["chat"]
		require.Len(t, att, 1)
		assert.Equal(t, "400", attrs(att[0].Attributes)["error.type"])
		assert.Equal(t, pgw.OutcomeCallerError, attrs(att[0].Attributes)["pgw.outcome"])
	})
}
