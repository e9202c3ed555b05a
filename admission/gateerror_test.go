package admission_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
)

// A gate error on one source must not end a call while another source's
// rejection is one the scope waits for.
func TestPickWaitsForAnotherSourceInsteadOfFailingOnAGateError(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		quotaFull, circuitOpen admission.Mode
		quotaRejects           bool // s2 is rate limited (else its breaker is open)
		wantErr                bool
	}{
		{"quota_full=wait, s2 rate limited", admission.Wait, admission.FailFast, true, false},
		{"quota_full=fail_fast, s2 rate limited", admission.FailFast, admission.FailFast, true, true},
		{"circuit_open=wait, s2 open", admission.Wait, admission.Wait, false, false},
		{"circuit_open=fail_fast, s2 open", admission.Wait, admission.FailFast, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			b := &oneFailing{ProviderGate: f.breaker, broken: "s1"}
			adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}, {Name: "s2"}},
				Breaker: b, Quota: f.quota, Rand: func() float64 { return 0 }, Logger: slog.New(f.logs),
				QuotaFull: tc.quotaFull, CircuitOpen: tc.circuitOpen, Clock: f.clk, Sleep: f.sleeper.sleep, PollInterval: poll})
			require.NoError(t, err)
			if tc.quotaRejects {
				f.quota.setReject("s2", time.Second)
			} else {
				f.open(t, "s2")
			}
			tk, rej, err := adm.Pick(context.Background(), nil, 1)
			require.Nil(t, tk)
			if tc.wantErr {
				require.ErrorIs(t, err, errGateDown)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{"s2"}, rej.Sources())

			// The call waits for s2 and is admitted once s2 frees.
			call := adm.NewCall(nil)
			_, rej, err = call.Pick(context.Background(), 1)
			require.NoError(t, err)
			if tc.quotaRejects {
				f.quota.clear("s2")
			} else {
				f.clk.Advance(cooldown)
			}
			require.NoError(t, call.OnNoRunnable(context.Background(), rej))
			tk, _, err = call.Pick(context.Background(), 1)
			require.NoError(t, err)
			require.NotNil(t, tk)
			assert.Equal(t, "s2", tk.Source)
			require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
		})
	}
}
