package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestAFullPacerWindowSpendsNoRequestOfTheRPM: a round that finds the
// source's pacer window full sends nothing upstream, so it must not spend a
// request of the source's RPM, which no give-back can return. Without that,
// every waiting call's round (one per poll interval) burnt one request, and
// once the window freed the RPM rejected calls the upstream never saw. Both
// admission paths are pinned: the breaker and the quota asked one after the
// other (a breaker of another kind), and in one operation (gate.Admitter).
func TestAFullPacerWindowSpendsNoRequestOfTheRPM(t *testing.T) {
	for _, combined := range []bool{false, true} {
		name := "SeparateGates"
		if combined {
			name = "CombinedAdmit"
		}
		t.Run(name, func(t *testing.T) {
			clk := testutil.NewFakeClock()
			ctx := context.Background()
			const rpm = 3
			q, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: rpm}}, memory.WithClock(clk))
			require.NoError(t, err)
			var b gate.ProviderGate = gate.Noop{}
			if combined {
				mb, err := memory.NewBreaker(gate.Policy{}, memory.WithClock(clk))
				require.NoError(t, err)
				b = mb
			}
			pacer, err := admission.NewPacer([]string{"s1"}, admission.PacerConfig{Ceiling: 1, Clock: clk})
			require.NoError(t, err)
			adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
				Breaker: b, Quota: q, Pacer: pacer, Clock: clk})
			require.NoError(t, err)

			held, _, err := adm.Pick(ctx, nil, 0)
			require.NoError(t, err)
			require.NotNil(t, held, "the first call is admitted: one request of %d spent", rpm)
			for range 2 * rpm {
				tk, rej, err := adm.Pick(ctx, nil, 0)
				require.NoError(t, err)
				require.Nil(t, tk, "the window of 1 is full")
				require.Len(t, rej, 1)
				assert.Equal(t, admission.AdaptivePaced, rej[0].Reason)
			}
			require.NoError(t, held.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))

			// The clock has not moved: the RPM holds exactly what was sent.
			for i := 1; i < rpm; i++ {
				tk, rej, err := adm.Pick(ctx, nil, 0)
				require.NoError(t, err)
				require.NotNil(t, tk, "call %d of %d: the paced-out rounds sent nothing upstream, yet %v", i+1, rpm, rej)
				require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
			}
			tk, rej, err := adm.Pick(ctx, nil, 0)
			require.NoError(t, err)
			require.Nil(t, tk, "%d requests sent: the RPM is spent", rpm)
			assert.Equal(t, admission.RateLimited, rej[0].Reason)
		})
	}
}
