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
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestSpentAdvertisedBudgetSpendsNoRPM: on the memory backend a round that
// the spent advertised budget turns away must not take a request of the
// configured RPM — a request reserved in the bucket cannot be given back,
// so every waiter polling until the reset would otherwise burn one per
// round. After the refused rounds the RPM still holds its whole minute, and
// after the reset every waiter is admitted.
func TestSpentAdvertisedBudgetSpendsNoRPM(t *testing.T) {
	const waiters = 4
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1}, memory.WithClock(clk))
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: waiters, MaxInFlight: waiters}}, memory.WithClock(clk))
	require.NoError(t, err)
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: b, Quota: q, Clock: clk,
		Logger:      slog.New(slog.DiscardHandler),
		Advertising: admission.Advertising{Budget: memory.NewBudget(memory.WithClock(clk))},
	})
	require.NoError(t, err)
	ctx := context.Background()
	adm.Advertise(ctx, "s1", adm.ReadAnswer("s1", openAIHeaders("60", "0", "20s")))

	// Each waiter's rounds until the reset: all refused by the budget.
	for round := range 3 {
		for range waiters {
			tk, rej, err := adm.Pick(ctx, nil, 1)
			require.NoError(t, err)
			require.Nil(t, tk)
			require.Len(t, rej, 1)
			assert.Equal(t, admission.RateLimited, rej[0].Reason)
			assert.Equal(t, 20*time.Second-time.Duration(round)*time.Second, rej[0].RetryAfter, "the advertised reset")
		}
		clk.Advance(time.Second)
	}
	assert.Zero(t, q.InFlight("s1"), "a refused round holds no slot")

	// The reset: the budget is its limit again, and each waiter is
	// admitted by the RPM it did not spend while refused.
	clk.Advance(17 * time.Second)
	var tickets []*admission.Ticket
	for range waiters {
		tk, rej, err := adm.Pick(ctx, nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk, "the RPM was spent by refused rounds: %v", rej)
		tickets = append(tickets, tk)
	}
	_, qd, err := q.Acquire(ctx, "s1", 1)
	require.NoError(t, err)
	assert.False(t, qd.Allowed, "exactly the admitted calls took the RPM")
	for _, tk := range tickets {
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))
	}
}
