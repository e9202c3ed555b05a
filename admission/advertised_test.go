package admission_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/provider"
)

// withBudget gives the fixture an in-process advertised budget on its clock.
func withBudget(configured map[string]gate.Limits) fixtureOpt {
	return func(c *admission.Config) {
		c.Advertising = admission.Advertising{Budget: memory.NewBudget(memory.WithClock(c.Clock)), Configured: configured,
			Dialects: map[string]provider.Dialect{"s1": provider.DialectOpenAI}}
	}
}

func openAIHeaders(limit, remaining string, reset string) http.Header {
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", limit)
	h.Set("x-ratelimit-remaining-requests", remaining)
	h.Set("x-ratelimit-reset-requests", reset)
	return h
}

// TestSpentAdvertisedBudgetIsQuotaFull: an answer that says nothing is left
// holds the source back like a full quota, with the reset as the certain
// wait, under both QUOTA_FULL modes and both CIRCUIT_OPEN modes.
func TestSpentAdvertisedBudgetIsQuotaFull(t *testing.T) {
	for _, circuit := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("QUOTA_FULL=fail_fast/CIRCUIT_OPEN="+string(circuit), func(t *testing.T) {
			f := newFixture(t, withModes(admission.FailFast, circuit), withBudget(nil))
			f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "20s")))
			_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
			var ase *errs.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
			assert.Equal(t, map[string]string{"s1": "rate_limited"}, ase.Reasons)
			assert.Equal(t, 20*time.Second, ase.RetryAfter, "the advertised reset")
			f.assertNothingHeld(t)
		})
		t.Run("QUOTA_FULL=wait/CIRCUIT_OPEN="+string(circuit), func(t *testing.T) {
			f := newFixture(t, withModes(admission.Wait, circuit), withBudget(nil))
			f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "20s")))
			tk, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
			require.NoError(t, err)
			assert.Equal(t, "s1", tk.Source)
			assert.Equal(t, []time.Duration{20*time.Second + jitter}, f.sleeper.taken(), "one nap to the reset")
		})
	}
}

// TestAdvertisedBudgetPastTheDeadlineEndsTheWaitAtOnce: a reset after the
// caller's deadline is a certain wait that cannot pay off.
func TestAdvertisedBudgetPastTheDeadlineEndsTheWaitAtOnce(t *testing.T) {
	f := newFixture(t, withModes(admission.Wait, admission.Wait), withBudget(nil))
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "59s")))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := f.run(ctx, f.adm.NewCall(f.stall()), succeed)
	var ase *errs.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, 59*time.Second, ase.RetryAfter)
	assert.Empty(t, f.sleeper.taken())
}

// TestEachAdmissionTakesItsShareOfTheAdvertisedRemaining: 3 left means three
// admissions, then none until the reset, whatever the configured quota says.
func TestEachAdmissionTakesItsShareOfTheAdvertisedRemaining(t *testing.T) {
	f := newFixture(t, withBudget(nil))
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "3", "30s")))
	for range 3 {
		tk, _, err := f.adm.Pick(context.Background(), nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk)
		require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
	}
	tk, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	require.Nil(t, tk)
	assert.Equal(t, admission.Rejections{{Source: "s1", Reason: admission.RateLimited, RetryAfter: 30 * time.Second}}, rej)
	f.assertNothingHeld(t)
	a, ok, err := f.adm.Advertised(context.Background(), "s1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, gate.AdvertisedWindow{Limit: 60, Remaining: 0, Reset: 30 * time.Second}, a.Requests)
}

// TestMalformedHeadersNeverShortenAHoldOffInForce: unreadable values are
// ignored (counted, logged at Debug), and the spent budget they arrive on
// still holds the source back until its reset.
func TestMalformedHeadersNeverShortenAHoldOffInForce(t *testing.T) {
	f := newFixture(t, withBudget(nil))
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "30s")))
	f.clk.Advance(10 * time.Second)
	for _, h := range []http.Header{
		openAIHeaders("sixty", "lots", "soon"),
		openAIHeaders("60", "-5", "1ms"),
	} {
		f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", h))
	}
	assert.Equal(t, uint64(4), f.adm.MalformedHeaders(), "sixty, lots, soon, -5")
	var debug []slog.Record
	for _, r := range f.logs.records(slog.LevelDebug) {
		if r.Message == "pgw: unreadable rate-limit header ignored" {
			debug = append(debug, r)
		}
	}
	require.Len(t, debug, 2, "one Debug line per answer")
	assert.Contains(t, attrs(debug[0])["headers"].String(), "x-ratelimit-remaining-requests=lots")

	_, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	assert.Equal(t, admission.Rejections{{Source: "s1", Reason: admission.RateLimited, RetryAfter: 20 * time.Second}}, rej,
		"the hold-off in force is not shortened")
}

// TestAResetFarAheadIsClampedAndLogged: a per-minute header claiming a
// reset ten hours ahead holds the source off provider.MaxReset at most.
func TestAResetFarAheadIsClampedAndLogged(t *testing.T) {
	f := newFixture(t, withBudget(nil))
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "10h")))
	_, rej, err := f.adm.Pick(context.Background(), nil, 1)
	require.NoError(t, err)
	require.Len(t, rej, 1)
	assert.Equal(t, provider.MaxReset, rej[0].RetryAfter)
	var clamped int
	for _, r := range f.logs.records(slog.LevelInfo) {
		if r.Message == "pgw: rate-limit reset too far ahead; clamped" {
			clamped++
		}
	}
	assert.Equal(t, 1, clamped)
}

// TestAdvertisedLimitOtherThanConfiguredIsLoggedOncePerSource.
func TestAdvertisedLimitOtherThanConfiguredIsLoggedOncePerSource(t *testing.T) {
	f := newFixture(t, withBudget(map[string]gate.Limits{"s1": {RPM: 100, TPM: 50_000}}))
	for range 3 {
		f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "50", "1s")))
	}
	var lines []slog.Record
	for _, r := range f.logs.records(slog.LevelInfo) {
		if r.Message == "pgw: the upstream advertises other rate limits than configured" {
			lines = append(lines, r)
		}
	}
	require.Len(t, lines, 1)
	a := attrs(lines[0])
	assert.Equal(t, int64(100), a["configured_rpm"].Int64())
	assert.Equal(t, int64(60), a["advertised_requests"].Int64())
	assert.Equal(t, "s1", a["source"].String())
}

// TestPacerShrinksOnLittleHeadroom: the pacer takes an answer with under a
// tenth left as a throttle, once per DecreaseHold.
func TestPacerShrinksOnLittleHeadroom(t *testing.T) {
	clk := &pacerClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p, err := admission.NewPacer([]string{"s1"}, admission.PacerConfig{Ceiling: 16, Clock: clk})
	require.NoError(t, err)
	p.Headroom("s1", 50, 60)
	w, _ := p.Window("s1")
	assert.Equal(t, 16, w, "plenty left: unchanged")
	p.Headroom("s1", 5, 60)
	w, _ = p.Window("s1")
	assert.Equal(t, 8, w)
	p.Headroom("s1", 4, 60)
	w, _ = p.Window("s1")
	assert.Equal(t, 8, w, "the same congestion within DecreaseHold")
	clk.t = clk.t.Add(admission.DefaultDecreaseHold)
	p.Headroom("s1", 0, 60)
	w, _ = p.Window("s1")
	assert.Equal(t, 4, w)
}

type pacerClock struct{ t time.Time }

func (c *pacerClock) Now() time.Time { return c.t }

// countingBudget counts the budget's round trips.
type countingBudget struct {
	gate.BudgetGate
	takes int
}

func (c *countingBudget) Take(ctx context.Context, s string, est int64) (gate.BudgetDecision, error) {
	c.takes++
	return c.BudgetGate.Take(ctx, s, est)
}

// TestSilentSourcesCostNoBudgetRoundTrip: once a source's answers advertise
// nothing, Pick stops asking the budget about it — but never while figures
// heard before still hold.
func TestSilentSourcesCostNoBudgetRoundTrip(t *testing.T) {
	var cb *countingBudget
	f := newFixture(t, func(c *admission.Config) {
		cb = &countingBudget{BudgetGate: memory.NewBudget(memory.WithClock(c.Clock))}
		c.Advertising = admission.Advertising{Budget: cb}
	})
	pick := func() admission.Rejections {
		t.Helper()
		tk, rej, err := f.adm.Pick(context.Background(), nil, 1)
		require.NoError(t, err)
		if tk != nil {
			require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Success}))
		}
		return rej
	}
	silent := f.adm.ReadAnswer("s1", http.Header{})

	pick()
	assert.Equal(t, 1, cb.takes, "before any answer the budget is asked (it counts blind calls)")
	f.adm.Advertise(context.Background(), "s1", silent)
	pick()
	pick()
	assert.Equal(t, 1, cb.takes, "a source that advertises nothing costs no round trip")

	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("60", "0", "10s")))
	f.adm.Advertise(context.Background(), "s1", silent) // a 200 without headers meanwhile
	rej := pick()
	assert.Equal(t, 2, cb.takes, "the spent budget still holds: asked")
	require.Len(t, rej, 1)
	assert.Equal(t, admission.RateLimited, rej[0].Reason)

	f.clk.Advance(10 * time.Second)
	f.adm.Advertise(context.Background(), "s1", silent)
	pick()
	assert.Equal(t, 2, cb.takes, "silent again once the figures heard have reset")
}

// A silent source is spared the budget whatever its place in the
// configuration: here the source tried first is the one configured second.
// Its budget is spent behind the admission's back, and it has just answered
// without figures: Pick admits it without asking the budget, with the
// quota asked on its own and with a quota that combines the budget with
// the breaker.
func TestSilenceIsTheSourcesOwnWhateverItsPlace(t *testing.T) {
	for _, combined := range []bool{false, true} {
		var bg *memory.Budget
		f := newFixture(t, func(c *admission.Config) {
			c.Sources = []admission.Source{{Name: "s1", Priority: 1}, {Name: "s2"}}
			bg = memory.NewBudget(memory.WithClock(c.Clock))
			c.Advertising = admission.Advertising{Budget: bg}
			if combined {
				q, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: 1000}, "s2": {RPM: 1000}}, memory.WithClock(c.Clock))
				require.NoError(t, err)
				b, err := memory.NewBreaker(gate.Policy{}, memory.WithClock(c.Clock))
				require.NoError(t, err)
				c.Quota, c.Breaker = q, b
			}
		})
		ctx := context.Background()
		spent := gate.Advertised{
			Requests: gate.AdvertisedWindow{Limit: 10, Remaining: 0, Reset: time.Minute},
			Tokens:   gate.UnknownWindow,
		}
		require.NoError(t, bg.Refresh(ctx, "s2", spent))
		tk, rej, err := f.adm.Pick(ctx, nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk)
		assert.Equal(t, "s1", tk.Source, "combined=%v: s2's spent budget is asked before s2 is silent", combined)
		require.Len(t, rej, 1)
		assert.Equal(t, "s2", rej[0].Source)
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))

		f.adm.Advertise(ctx, "s2", f.adm.ReadAnswer("s2", http.Header{}))
		tk, _, err = f.adm.Pick(ctx, nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk)
		assert.Equal(t, "s2", tk.Source, "combined=%v: a silent s2 is admitted without its budget", combined)
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))
	}
}
