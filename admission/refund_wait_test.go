package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// As for its slot, a caller that calls again as soon as its call returned
// must not be refused the tokens its finished call gives back because the
// settlement lingers in the writer: Pick, refused the source's TPM while
// such an outcome of its own waits in the writer, ends the linger, waits for
// the write and asks again. With estimates of most of the minute's TPM,
// every serial call after the first was refused, told to wait for the
// refill of a reservation already refunded.
func TestPickWaitsForItsOwnRefundInTheWriter(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {TPM: 1000}})
	require.NoError(t, err)
	w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute})
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, used := range []int64{1, 0, 1} { // usages of 1 and 0 tokens: refunds of 899 and 900
		tk, rej, err := adm.Pick(ctx, nil, 900)
		require.NoError(t, err)
		require.NotNil(t, tk, "call %d refused its own refund: %v", i, rej)
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: used}))
		eventually(t, "a round lingers with the outcome", func() bool { return w.Lingering() == 1 })
	}
	// Tokens another call holds are refused as before, without a wait.
	tk, _, err := adm.Pick(ctx, nil, 900)
	require.NoError(t, err)
	require.NotNil(t, tk)
	other, rej, err := adm.Pick(ctx, nil, 900)
	require.NoError(t, err)
	require.Nil(t, other)
	require.Equal(t, admission.RateLimited, rej[0].Reason)
	require.Greater(t, rej[0].RetryAfter, 40*time.Second, "the reservation held: 800 tokens over the minute")
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
}
