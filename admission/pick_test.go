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
	"github.com/pgw-go/pgw/internal/errs"
)

// TestPickChecksMemoBreakerQuotaPacerInOrder: each stage rejecting alone
// yields its reason, and a later stage is not consulted.
func TestPickChecksMemoBreakerQuotaPacerInOrder(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(t *testing.T, f *fixture)
		reason     admission.Reason
		retryAfter time.Duration
		tryEnters  int64
	}{
		{"memo says cooldown: the breaker is not asked", func(t *testing.T, f *fixture) {
			f.adm.Memo().SetUntil("s1", f.clk.Now().Add(5*time.Second))
		}, admission.Cooldown, 5 * time.Second, 0},
		{"memo says held off by Retry-After: the breaker is not asked", func(t *testing.T, f *fixture) {
			f.adm.HoldOff("s1", 5*time.Second)
		}, admission.HeldOff, 5 * time.Second, 0},
		{"breaker open", func(t *testing.T, f *fixture) { f.open(t, "s1") }, admission.CircuitOpen, cooldown, 1},
		{"quota full", func(t *testing.T, f *fixture) { f.quota.setReject("s1", 3*time.Second) }, admission.RateLimited, 3 * time.Second, 1},
		{"pacer window full", func(t *testing.T, f *fixture) { f.pacer.limit["s1"] = 0 }, admission.AdaptivePaced, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.setup(t, f)
			tk, rej, err := f.adm.Pick(context.Background(), nil, 10)
			require.NoError(t, err)
			require.Nil(t, tk)
			assert.Equal(t, admission.Rejections{{Source: "s1", Reason: c.reason, RetryAfter: c.retryAfter}}, rej)
			assert.Equal(t, c.tryEnters, f.gate.tryEnter.Load())
			assert.Zero(t, f.quota.held("s1"), "nothing held after a rejection")
			assert.Zero(t, f.pacer.holding("s1"))
		})
	}
}

func TestBreakerRejectionWritesTheMemoUntilRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.open(t, "s1")
	f.clk.Advance(20 * time.Second)
	_, _, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.Equal(t, 40*time.Second, f.adm.Memo().Remaining("s1", f.clk.Now()))

	_, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.Equal(t, admission.Cooldown, rej[0].Reason, "the next round is answered by the memo")
	assert.Equal(t, int64(1), f.gate.tryEnter.Load(), "without asking the gate again")
}

func TestPickWinnerHoldsProbePermitAndPacerSlotUntilDone(t *testing.T) {
	f := newFixture(t)
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	tk, _, err := f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	assert.True(t, tk.Decision.Probe)
	assert.Equal(t, 1, f.snapshot(t, "s1").ProbesInFlight)
	assert.Equal(t, 1, f.quota.held("s1"))
	assert.Equal(t, 1, f.pacer.holding("s1"))

	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success, Tokens: 4}))
	assert.Equal(t, gate.Closed, f.snapshot(t, "s1").State)
	assert.Zero(t, f.quota.held("s1"))
	assert.Equal(t, int64(4), f.quota.tokens("s1"), "the estimate is settled to the actual count")
	assert.Zero(t, f.pacer.holding("s1"))
}

func TestTicketDoneActsExactlyOnce(t *testing.T) {
	f := newFixture(t)
	tk, _, err := f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success, Tokens: 10}))
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Failure}))
	assert.Equal(t, int64(1), f.gate.record.Load())
	assert.Equal(t, 0, f.quota.held("s1"), "released once, not twice")
	assert.Equal(t, 0, f.pacer.holding("s1"))
}

func TestTicketDoneGivesBackEvenWhenTheCallWasCancelled(t *testing.T) {
	f := newFixture(t)
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	ctx, cancel := context.WithCancel(context.Background())
	tk, _, err := f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err)
	cancel()
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Released}))
	assert.Zero(t, f.snapshot(t, "s1").ProbesInFlight)
	assert.Zero(t, f.quota.held("s1"))
}

// TestPickGivesBackWhatALoserTook: a source that passes the breaker but not
// the quota returns its probe lease; one that passes the quota but not the
// pacer returns its permit and the reserved tokens.
func TestPickGivesBackWhatALoserTook(t *testing.T) {
	f := newFixture(t, withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}, admission.Source{Name: "s3"}),
		withRand(func() float64 { return 0 })) // order s1, s2, s3
	f.open(t, "s1")
	f.clk.Advance(cooldown) // s1's next TryEnter is granted the probe
	f.quota.setReject("s1", time.Second)
	f.pacer.limit["s2"] = 0

	tk, rej, err := f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	assert.Equal(t, "s3", tk.Source)
	assert.Equal(t, admission.Rejections{
		{Source: "s1", Reason: admission.RateLimited, RetryAfter: time.Second},
		{Source: "s2", Reason: admission.AdaptivePaced},
	}, rej)
	assert.Equal(t, rej, tk.Skipped)

	s1 := f.snapshot(t, "s1")
	assert.Equal(t, gate.HalfOpen, s1.State)
	assert.Zero(t, s1.ProbesInFlight, "the probe granted to the loser s1 was released")
	assert.Zero(t, f.quota.held("s2"), "the permit taken for the loser s2 was released")
	assert.Zero(t, f.quota.tokens("s2"), "and its token reservation refunded")
	assert.Zero(t, f.pacer.holding("s2"))
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
}

type failingGate struct{ gate.ProviderGate }

var errGateDown = errors.New("redis is down")

func (failingGate) TryEnter(context.Context, string) (gate.Decision, error) {
	return gate.Decision{}, errGateDown
}

func TestPickSkipsASourceWhoseGateFailsAndServesFromAnother(t *testing.T) {
	f := newFixture(t)
	b := &oneFailing{ProviderGate: f.breaker, broken: "s1"}
	adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}, {Name: "s2"}},
		Breaker: b, Quota: f.quota, Rand: func() float64 { return 0 }, Logger: slog.New(f.logs)})
	require.NoError(t, err)
	tk, _, err := adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.Equal(t, "s2", tk.Source)
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
	assert.Len(t, f.logs.records(slog.LevelWarn), 1, "the gate error is logged")
}

type oneFailing struct {
	gate.ProviderGate
	broken string
}

func (g *oneFailing) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	if s == g.broken {
		return gate.Decision{}, errGateDown
	}
	return g.ProviderGate.TryEnter(ctx, s)
}

func TestPickReturnsAGateErrorHoldingNothing(t *testing.T) {
	f := newFixture(t)
	adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: failingGate{f.breaker}, Quota: f.quota, Logger: slog.New(f.logs)})
	require.NoError(t, err)
	tk, _, err := adm.Pick(context.Background(), nil, 1)
	assert.Nil(t, tk)
	require.ErrorIs(t, err, errGateDown)
	assert.Contains(t, err.Error(), `source "s1"`)
	assert.Zero(t, f.quota.held("s1"))
}

func TestPickReturnsCtxErrWhenTheCallIsAlreadyCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := f.adm.Pick(ctx, nil, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, f.gate.tryEnter.Load())
}

// cancellingBreaker cancels the call during the TryEnter round trip of
// source and answers with the cancellation, as go-redis does.
type cancellingBreaker struct {
	*countingGate
	source string
	cancel context.CancelFunc
}

func (g *cancellingBreaker) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	if s == g.source {
		g.cancel()
		return gate.Decision{}, ctx.Err()
	}
	return g.countingGate.TryEnter(ctx, s)
}

// cancellingQuota cancels the call during the Acquire round trip of source.
type cancellingQuota struct {
	*fakeQuota
	source string
	cancel context.CancelFunc
}

func (q *cancellingQuota) Acquire(ctx context.Context, s string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	if s == q.source {
		q.cancel()
		return gate.Permit{}, gate.QuotaDecision{}, ctx.Err()
	}
	return q.fakeQuota.Acquire(ctx, s, est)
}

// TestPickEndsAtOnceWhenTheCallIsCancelledDuringAGateRoundTrip: the gate's
// error is the caller's cancellation, not a gate failure — the round ends
// with ctx.Err(), asks no further source, holds nothing and logs nothing.
func TestPickEndsAtOnceWhenTheCallIsCancelledDuringAGateRoundTrip(t *testing.T) {
	for _, stage := range []string{"breaker", "quota"} {
		t.Run(stage, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cq *cancellingQuota
			f := newFixture(t, withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}),
				withRand(func() float64 { return 0 }), // order s1, s2
				func(c *admission.Config) {
					if stage == "breaker" {
						c.Breaker = &cancellingBreaker{countingGate: c.Breaker.(*countingGate), source: "s1", cancel: cancel}
					} else {
						cq = &cancellingQuota{fakeQuota: c.Quota.(*fakeQuota), source: "s1", cancel: cancel}
						c.Quota = cq
					}
				})

			tk, _, err := f.adm.Pick(ctx, nil, 10)
			assert.Nil(t, tk)
			require.ErrorIs(t, err, context.Canceled)
			assert.NotContains(t, err.Error(), "gate", "a cancellation is not reported as a gate error")
			assert.Empty(t, f.logs.records(slog.LevelWarn), "nothing logged: no gate failed")
			asked := int64(0) // the cancelling breaker does not count s1
			if stage == "quota" {
				asked = 1 // s1
			}
			assert.Equal(t, asked, f.gate.tryEnter.Load(), "s2 was not asked")
			assert.Zero(t, f.snapshot(t, "s1").ProbesInFlight)
			assert.Zero(t, f.quota.held("s1"))
			assert.Zero(t, f.quota.held("s2"))
			if stage == "quota" {
				assert.EqualValues(t, 1, f.gate.record.Load(), "s1's breaker decision was given back")
			}
		})
	}
}

func TestNewReportsEveryInvalidField(t *testing.T) {
	_, err := admission.New(admission.Config{
		Sources:      []admission.Source{{Name: "a"}, {Name: "a", Weight: -1}, {}},
		QuotaFull:    "later",
		PollInterval: -time.Second,
	})
	var ce *admission.ConfigError
	require.ErrorAs(t, err, &ce)
	msg := err.Error()
	for _, want := range []string{"Scope", `Sources[1].Name="a"`, "Sources[1].Weight=-1", `Sources[2].Name=""`,
		"Breaker is nil", `QuotaFull="later"`, `"wait", "fail_fast"`, "PollInterval=-1s"} {
		assert.Contains(t, msg, want)
	}
}

func TestPickWithTheAIMDPacer(t *testing.T) {
	f := newFixture(t)
	pacer, err := admission.NewPacer([]string{"s1"}, admission.PacerConfig{Ceiling: 4, Initial: 2, Clock: f.clk})
	require.NoError(t, err)
	adm, err := admission.New(admission.Config{Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: gate.Noop{}, Quota: f.quota, Pacer: pacer, Clock: f.clk})
	require.NoError(t, err)
	ctx := context.Background()

	a, _, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	b, _, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	c, rej, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	require.Nil(t, c)
	assert.Equal(t, admission.AdaptivePaced, rej[0].Reason, "the window of 2 is full")
	assert.Equal(t, 2, f.quota.held("s1"), "the paced-out round gave its permit back")

	require.NoError(t, a.Done(ctx, admission.Result{Outcome: gate.Released, Throttled: true}))
	w, inFlight := pacer.Window("s1")
	assert.Equal(t, 1, w, "a 429 halves the window")
	assert.Equal(t, 1, inFlight)

	require.NoError(t, b.Done(ctx, admission.Result{Outcome: gate.Failure}))
	w, inFlight = pacer.Window("s1")
	assert.Equal(t, 1, w, "a 5xx is neutral for the pacer")
	assert.Zero(t, inFlight)

	d, _, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	require.NotNil(t, d)
	require.NoError(t, d.Done(ctx, admission.Result{Outcome: gate.Success}))
	w, _ = pacer.Window("s1")
	assert.Equal(t, 2, w, "a window's worth of successes (1) grows it by one")
}

// holdingOffQuota is a quota gate during whose first Acquire round trip for
// source an upstream's Retry-After for it reaches the memo, as a concurrent
// call's 429 would.
type holdingOffQuota struct {
	*fakeQuota
	adm      **admission.SourceAdmission
	source   string
	holdOff  time.Duration
	acquired int
}

func (q *holdingOffQuota) Acquire(ctx context.Context, source string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	p, d, err := q.fakeQuota.Acquire(ctx, source, est)
	if source == q.source {
		q.acquired++
		if q.acquired == 1 {
			(*q.adm).HoldOff(source, q.holdOff)
		}
	}
	return p, d, err
}

// TestPickHonoursARetryAfterThatLandsDuringTheGateRoundTrips: the memo is
// read again after the gates answered, so a source held off while its
// breaker and quota were being asked is not admitted, and everything taken
// for it is given back.
func TestPickHonoursARetryAfterThatLandsDuringTheGateRoundTrips(t *testing.T) {
	var adm *admission.SourceAdmission
	q := &holdingOffQuota{fakeQuota: newFakeQuota(), adm: &adm, source: "s1", holdOff: 2 * time.Second}
	f := newFixture(t, withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}),
		withRand(func() float64 { return 0 }), // order s1, s2
		func(c *admission.Config) { c.Quota = q })
	adm = f.adm

	tk, rej, err := f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	assert.Equal(t, "s2", tk.Source, "s1 was held off before its ticket was handed out")
	assert.Equal(t, admission.Rejections{{Source: "s1", Reason: admission.HeldOff, RetryAfter: 2 * time.Second}}, rej)
	assert.Equal(t, 1, q.acquired)
	assert.Zero(t, q.held("s1"), "the permit taken for s1 was released")
	assert.Zero(t, q.tokens("s1"), "and its reservation refunded")
	assert.Zero(t, f.pacer.holding("s1"))
	assert.EqualValues(t, 1, f.gate.record.Load(), "s1's breaker decision was given back as Released")
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))

	f.clk.Advance(2 * time.Second)
	tk, _, err = f.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	assert.Equal(t, "s1", tk.Source, "once the hold-off ran out s1 is admitted again")
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
}

// finishingQuota is a fakeQuota that is also a gate.Finisher and counts how
// permits come back.
type finishingQuota struct {
	*fakeQuota
	finishes, settles, releases int
}

func (q *finishingQuota) Finish(ctx context.Context, p gate.Permit, actual int64) error {
	q.finishes++
	_ = q.fakeQuota.Settle(ctx, p, actual)
	return q.fakeQuota.Release(ctx, p)
}

func (q *finishingQuota) Settle(ctx context.Context, p gate.Permit, actual int64) error {
	q.settles++
	return q.fakeQuota.Settle(ctx, p, actual)
}

func (q *finishingQuota) Release(ctx context.Context, p gate.Permit) error {
	q.releases++
	return q.fakeQuota.Release(ctx, p)
}

// TestDoneGivesAPermitBackInOneFinishWhenTheQuotaCan: with a gate.Finisher
// (the Redis quota: one round trip) Done settles and releases through one
// Finish; a result without a token count keeps the estimate and only
// releases.
func TestDoneGivesAPermitBackInOneFinishWhenTheQuotaCan(t *testing.T) {
	q := &finishingQuota{fakeQuota: newFakeQuota()}
	f := newFixture(t, func(c *admission.Config) { c.Quota = q })
	ctx := context.Background()

	tk, _, err := f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: 4}))
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{q.finishes, q.settles, q.releases}, "finishes, settles, releases")
	assert.EqualValues(t, 4, q.tokens("s1"), "settled to the actual count")
	assert.Zero(t, q.held("s1"))

	tk, _, err = f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
	assert.Equal(t, [3]int{1, 0, 1}, [3]int{q.finishes, q.settles, q.releases}, "no count: released, the estimate stands")
	assert.EqualValues(t, 14, q.tokens("s1"))
	assert.Zero(t, q.held("s1"))
}

// TestRetryAfterHoldOffIsNotReportedAsCircuitOpen: a source the upstream
// held off with a 429's Retry-After, its breaker closed, is a throttle: the
// QUOTA_FULL policy applies, and with fail_fast the error carries the
// certain wait and the reason retry_after — never "circuit open".
func TestRetryAfterHoldOffIsNotReportedAsCircuitOpen(t *testing.T) {
	f := newFixture(t, withModes(admission.FailFast, admission.FailFast))
	f.adm.HoldOff("s1", 7*time.Second)
	call := f.adm.NewCall(nil)
	tk, rej, err := call.Pick(context.Background(), 10)
	require.NoError(t, err)
	require.Nil(t, tk)
	err = call.OnNoRunnable(context.Background(), rej)
	var coe *errs.CircuitOpenError
	assert.False(t, errors.As(err, &coe), "a hold-off is no open circuit: %v", err)
	var ase *errs.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
	assert.Equal(t, map[string]string{"s1": "retry_after"}, ase.Reasons)
	assert.Equal(t, 7*time.Second, ase.RetryAfter, "the certain wait the rejection knew")
	assert.Contains(t, err.Error(), "s1=retry_after; retry after 7s")
	assert.NotContains(t, err.Error(), "circuit open")
}
