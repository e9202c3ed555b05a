package admission_test

import (
	"context"
	"errors"
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

// exitRig is one source behind real in-process gates with one of each
// resource: a breaker in HalfOpen with a single probe lease, a quota of one
// call in flight, a pacer window of one. After any round that does not hand
// out a ticket, each must be free again.
type exitRig struct {
	clk     *testutil.FakeClock
	breaker *memory.Breaker
	quota   *memory.Quota
	budget  *memory.Budget
	pacer   *admission.Pacer
	adm     *admission.SourceAdmission
}

type rigOpt struct {
	hideAdmit bool                                      // the quota gate cannot combine with the breaker
	budget    bool                                      // the admission reads rate-limit headers
	breaker   func(gate.ProviderGate) gate.ProviderGate // wraps the breaker
}

// plainQuota hides the combined admission of a quota gate: Pick then asks
// the breaker and the quota one after the other.
type plainQuota struct{ gate.QuotaGate }

func newExitRig(t *testing.T, o rigOpt) *exitRig {
	t.Helper()
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, MaxCooldown: 4 * cooldown, ProbeTTL: probeTTL, HalfOpenProbes: 1},
		memory.WithClock(clk))
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1, TPM: 1000}}, memory.WithClock(clk))
	require.NoError(t, err)
	p, err := admission.NewPacer([]string{"s1"}, admission.PacerConfig{Ceiling: 1, Clock: clk})
	require.NoError(t, err)
	r := &exitRig{clk: clk, breaker: b, quota: q, pacer: p}
	cfg := admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: b, Quota: q, Pacer: p, Clock: clk,
		QuotaFull: admission.FailFast, CircuitOpen: admission.FailFast,
		Rand: func() float64 { return 0.5 }, Logger: slog.New(&logSink{}),
		Sleep: func(context.Context, time.Duration) error { return errors.New("no sleep in this test") },
	}
	if o.breaker != nil {
		cfg.Breaker = o.breaker(b)
	}
	if o.hideAdmit {
		cfg.Quota = plainQuota{q}
	}
	if o.budget {
		r.budget = memory.NewBudget(memory.WithClock(clk))
		cfg.Advertising = admission.Advertising{Budget: r.budget}
	}
	r.adm, err = admission.New(cfg)
	require.NoError(t, err)
	// Open the breaker, then let its cooldown pass: the next TryEnter is
	// the HalfOpen probe, the only one.
	d, err := b.TryEnter(context.Background(), "s1")
	require.NoError(t, err)
	_, err = b.Record(context.Background(), "s1", d, gate.Failure)
	require.NoError(t, err)
	clk.Advance(cooldown + time.Second)
	return r
}

// spendBudget makes the advertised budget refuse the next call until a
// reset one minute away.
func (r *exitRig) spendBudget(t *testing.T) {
	t.Helper()
	require.NoError(t, r.budget.Refresh(context.Background(), "s1", gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 10, Remaining: 0, Reset: time.Minute},
		Tokens:   gate.UnknownWindow,
	}))
}

// requireAllFree asserts that nothing is held: the probe lease can be taken
// (and is given back), no in-flight slot is taken, the pacer's window is
// empty.
func (r *exitRig) requireAllFree(t *testing.T) {
	t.Helper()
	_, inFlight := r.pacer.Window("s1")
	assert.Zero(t, inFlight, "the pacer's slot was given back")
	assert.Zero(t, r.quota.InFlight("s1"), "the quota's in-flight slot was given back")
	d, err := r.breaker.TryEnter(context.Background(), "s1")
	require.NoError(t, err)
	assert.True(t, d.Allowed && d.Probe, "the probe lease was given back: %+v", d)
	if d.Allowed {
		_, err = r.breaker.Record(context.Background(), "s1", d, gate.Released)
		require.NoError(t, err)
	}
}

// holdOffBreaker is a breaker that lets an upstream's Retry-After reach the
// memo while its answer is on the way: the round's fresh look at the memo
// then refuses the source it just admitted.
type holdOffBreaker struct {
	gate.ProviderGate
	adm **admission.SourceAdmission
}

func (h holdOffBreaker) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	d, err := h.ProviderGate.TryEnter(ctx, s)
	(*h.adm).HoldOff(s, time.Minute)
	return d, err
}

// cancelQuota is a quota gate whose Acquire sees the caller give up.
type cancelQuota struct {
	gate.QuotaGate
	cancel context.CancelFunc
}

func (c cancelQuota) Acquire(ctx context.Context, s string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	c.cancel()
	return c.QuotaGate.Acquire(ctx, s, est)
}

// Every way a round refuses the source after taking something gives all of
// it back: the probe lease, the in-flight slot, the pacer's slot.
func TestPickRefusalsGiveBackEverythingTheyTook(t *testing.T) {
	for _, combined := range []bool{true, false} {
		name := "combined"
		if !combined {
			name = "one_by_one"
		}
		t.Run(name+"/quota_full", func(t *testing.T) {
			r := newExitRig(t, rigOpt{hideAdmit: !combined})
			p, qd, err := r.quota.Acquire(context.Background(), "s1", 1)
			require.NoError(t, err)
			require.True(t, qd.Allowed)
			tk, rej, err := r.adm.Pick(context.Background(), nil, 10)
			require.NoError(t, err)
			require.Nil(t, tk)
			require.Equal(t, admission.RateLimited, rej[0].Reason)
			require.NoError(t, r.quota.Release(context.Background(), p))
			r.requireAllFree(t)
		})
		t.Run(name+"/tokens_beyond_tpm", func(t *testing.T) {
			r := newExitRig(t, rigOpt{hideAdmit: !combined})
			tk, _, err := r.adm.Pick(context.Background(), nil, 5000)
			var te *gate.TokensError
			require.ErrorAs(t, err, &te)
			require.Nil(t, tk)
			r.requireAllFree(t)
		})
		t.Run(name+"/budget_spent", func(t *testing.T) {
			r := newExitRig(t, rigOpt{hideAdmit: !combined, budget: true})
			r.spendBudget(t)
			tk, rej, err := r.adm.Pick(context.Background(), nil, 10)
			require.NoError(t, err)
			require.Nil(t, tk)
			require.Equal(t, admission.RateLimited, rej[0].Reason)
			r.requireAllFree(t)
		})
		t.Run(name+"/held_off_meanwhile", func(t *testing.T) {
			var adm *admission.SourceAdmission
			r := newExitRig(t, rigOpt{hideAdmit: !combined, breaker: func(b gate.ProviderGate) gate.ProviderGate {
				return holdOffBreaker{ProviderGate: b, adm: &adm}
			}})
			adm = r.adm
			tk, rej, err := r.adm.Pick(context.Background(), nil, 10)
			require.NoError(t, err)
			require.Nil(t, tk)
			require.Equal(t, admission.HeldOff, rej[0].Reason)
			r.requireAllFree(t)
		})
		t.Run(name+"/pacer_full", func(t *testing.T) {
			r := newExitRig(t, rigOpt{hideAdmit: !combined})
			require.True(t, r.pacer.TryAcquire("s1"))
			tk, rej, err := r.adm.Pick(context.Background(), nil, 10)
			require.NoError(t, err)
			require.Nil(t, tk)
			require.Equal(t, admission.AdaptivePaced, rej[0].Reason)
			r.pacer.Release("s1", admission.PaceNeutral)
			r.requireAllFree(t)
		})
	}
}

// A caller that gives up while the quota is asked, one gate after the
// other, leaves nothing taken.
func TestPickCancelledAtTheQuotaGivesBackTheProbe(t *testing.T) {
	r := newExitRig(t, rigOpt{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: r.breaker, Quota: cancelQuota{QuotaGate: r.quota, cancel: cancel},
		Pacer: r.pacer, Clock: r.clk, Logger: slog.New(&logSink{}),
	})
	require.NoError(t, err)
	tk, _, err := adm.Pick(ctx, nil, 10)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, tk)
	r.requireAllFree(t)
}
