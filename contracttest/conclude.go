package contracttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// RunConclude pins gate.Concluder to its definition: a batch of
// conclusions, one per case, each on its own source, answers and leaves both
// gates exactly as Record followed by Finish do on a twin source with the
// same history (and so does a batch of several conclusions of one source:
// runConcludeRuns) — the same Update, the same breaker record and the same quota
// capacity afterwards. The factory's quota gate must implement
// gate.Concluder and combine with the breaker. Generations compare by their
// place in each source's own sequence, as in RunAdmit.
func RunConclude(t *testing.T, newGates AdmitFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("k%x%x", time.Now().UnixNano()&0xffffff, run)
	policy := basePolicy()
	policy.ConsecutiveFailures = 2
	longLease(&policy)
	type tc struct {
		name    string
		limits  gate.Limits
		outcome gate.Outcome
		tokens  int64 // the call's actual tokens (negative: estimate stands)
		trip    bool  // open the breaker and admit the probe first
	}
	cases := []tc{
		{name: "SuccessReleasesSlot", limits: gate.Limits{MaxInFlight: 1}, outcome: gate.Success, tokens: -1},
		{name: "FailureCounted", limits: gate.Limits{RPM: 10, MaxInFlight: 1}, outcome: gate.Failure, tokens: -1},
		{name: "FatalOpens", limits: gate.Limits{MaxInFlight: 1}, outcome: gate.Fatal, tokens: -1},
		{name: "TokensSettled", limits: gate.Limits{TPM: 100, MaxInFlight: 1}, outcome: gate.Success, tokens: 90},
		{name: "TokensRefunded", limits: gate.Limits{TPM: 100}, outcome: gate.Released, tokens: 0},
		{name: "ProbeSuccessCloses", limits: gate.Limits{MaxInFlight: 1}, outcome: gate.Success, tokens: -1, trip: true},
		{name: "ProbeFailureReopens", limits: gate.Limits{MaxInFlight: 1}, outcome: gate.Failure, tokens: -1, trip: true},
		{name: "Unlimited", outcome: gate.Failure, tokens: 5},
	}
	limits := map[string]gate.Limits{}
	for _, c := range cases {
		for _, side := range []string{"c", "s"} {
			if c.limits != (gate.Limits{}) {
				limits[sourceName(nonce, c.name, side)] = c.limits
			}
		}
	}
	b, q, clk := newGates(t, policy, limits)
	con, ok := q.(gate.Concluder)
	require.True(t, ok, "the quota gate does not implement gate.Concluder")
	h := newAdmitHarness(t, b, q)
	ctx := context.Background()

	// admit brings a source to the case's state and admits one call.
	admit := func(c tc, src string) gate.Conclusion {
		if c.trip {
			h.trip(src)
			h.trip(src)
		}
		return gate.Conclusion{Source: src, Outcome: c.outcome, Tokens: c.tokens}
	}
	batch := make([]gate.Conclusion, len(cases))
	twins := make([]gate.Conclusion, len(cases))
	for i, c := range cases {
		batch[i] = admit(c, sourceName(nonce, c.name, "c"))
		twins[i] = admit(c, sourceName(nonce, c.name, "s"))
	}
	// The tripped sources' cooldowns end; the others are Closed anyway.
	clk.Advance(policy.Cooldown + 2*clk.Slack())
	for i := range cases {
		for _, k := range []*gate.Conclusion{&batch[i], &twins[i]} {
			d := h.enter(k.Source)
			require.True(t, d.Allowed, "%s: admitted", k.Source)
			p, qd, err := q.Acquire(ctx, k.Source, 10)
			require.NoError(t, err)
			require.True(t, qd.Allowed, "%s: permit", k.Source)
			k.Decision, k.Permit, k.HasPermit = d, p, true
		}
	}
	require.True(t, con.Conclude(ctx, b, batch), "Conclude does not combine with the factory's breaker")
	for i, c := range cases {
		t.Run("Conclude/"+c.name, func(t *testing.T) {
			k, tw := batch[i], twins[i]
			require.NoError(t, k.Err)
			h.nums.see(k.Source, k.Update.Generation)
			u, err := b.Record(ctx, tw.Source, tw.Decision, tw.Outcome)
			require.NoError(t, err)
			h.nums.see(tw.Source, u.Generation)
			require.NoError(t, gate.Finish(ctx, q, tw.Permit, tw.Tokens))
			assert.Equal(t, u.Applied, k.Update.Applied, "applied")
			assert.Equal(t, u.State, k.Update.State, "state")
			assert.Equal(t, h.nums.rank(tw.Source, u.Generation), h.nums.rank(k.Source, k.Update.Generation), "generation")
			assert.Equal(t, u.Forced, k.Update.Forced, "override")
			assert.InDelta(t, float64(u.RetryAfter), float64(k.Update.RetryAfter), float64(time.Second), "RetryAfter")
			s1, s2 := h.snap(k.Source), h.snap(tw.Source)
			assert.Equal(t, s2.State, s1.State, "state afterwards")
			assert.Equal(t, h.nums.rank(tw.Source, s2.Generation), h.nums.rank(k.Source, s1.Generation), "generation afterwards")
			assert.Equal(t, s2.ConsecutiveFailures, s1.ConsecutiveFailures, "consecutive failures afterwards")
			assert.Equal(t, s2.ProbesInFlight, s1.ProbesInFlight, "probe leases afterwards")
			// The quota is alike: the same number of further permits fit.
			assert.Equal(t, fill(t, q, tw.Source), fill(t, q, k.Source), "quota capacity afterwards")
		})
	}
	t.Run("Conclude/Runs", func(t *testing.T) { runConcludeRuns(t, newGates, nonce, policy) })
}

// runConcludeRuns is RunConclude's second part: several conclusions of one
// source in one batch, with another source's between them, answer and leave
// the gates exactly as the same Records and Finishes, one after another, do
// on a twin source. A backend may conclude a source's consecutive
// Successes and Releaseds together; a Failure among them, which counts
// towards the breaker and which the next Success resets, must still be
// applied in its place.
func runConcludeRuns(t *testing.T, newGates AdmitFactory, nonce string, policy gate.Policy) {
	t.Helper()
	outcomes := []struct {
		o      gate.Outcome
		tokens int64
	}{
		{gate.Success, 50}, {gate.Released, 0}, {gate.Success, -1}, {gate.Failure, -1},
		{gate.Success, 20}, {gate.Released, 5}, {gate.Success, 10}, {gate.Success, 30},
	}
	limits := gate.Limits{TPM: 400, MaxInFlight: 40}
	src, twin, other := sourceName(nonce, "Run", "c"), sourceName(nonce, "Run", "s"), sourceName(nonce, "Run", "o")
	b, q, _ := newGates(t, policy, map[string]gate.Limits{src: limits, twin: limits, other: limits})
	con := q.(gate.Concluder)
	h := newAdmitHarness(t, b, q)
	ctx := context.Background()
	admitted := func(source string, o gate.Outcome, tokens int64) gate.Conclusion {
		d := h.enter(source)
		require.True(t, d.Allowed, "%s: admitted", source)
		p, qd, err := q.Acquire(ctx, source, 10)
		require.NoError(t, err)
		require.True(t, qd.Allowed, "%s: permit", source)
		return gate.Conclusion{Source: source, Decision: d, Outcome: o, Permit: p, HasPermit: true, Tokens: tokens}
	}
	var batch, twins []gate.Conclusion
	for i, x := range outcomes {
		batch = append(batch, admitted(src, x.o, x.tokens))
		twins = append(twins, admitted(twin, x.o, x.tokens))
		if i == 2 || i == 5 {
			batch = append(batch, admitted(other, gate.Success, 7))
		}
	}
	require.True(t, con.Conclude(ctx, b, batch))
	j := 0
	for _, k := range batch {
		require.NoError(t, k.Err, "%s", k.Source)
		h.nums.see(k.Source, k.Update.Generation)
		if k.Source != src {
			continue
		}
		tw := twins[j]
		j++
		u, err := b.Record(ctx, tw.Source, tw.Decision, tw.Outcome)
		require.NoError(t, err)
		h.nums.see(tw.Source, u.Generation)
		require.NoError(t, gate.Finish(ctx, q, tw.Permit, tw.Tokens))
		assert.Equal(t, u.Applied, k.Update.Applied, "outcome %d (%s): applied", j, tw.Outcome)
		assert.Equal(t, u.State, k.Update.State, "outcome %d (%s): state", j, tw.Outcome)
		assert.Equal(t, h.nums.rank(tw.Source, u.Generation), h.nums.rank(k.Source, k.Update.Generation), "outcome %d (%s): generation", j, tw.Outcome)
	}
	require.Equal(t, len(twins), j)
	s1, s2 := h.snap(src), h.snap(twin)
	assert.Equal(t, s2.State, s1.State, "state afterwards")
	assert.Equal(t, s2.ConsecutiveFailures, s1.ConsecutiveFailures, "consecutive failures afterwards")
	// 8 permits of 10 tokens, then corrections of +40 −10 +10 −5 0 +20:
	// 135 of 400 tokens spent, 26 more permits of 10 fit (MaxInFlight 40).
	assert.Equal(t, fillUpTo(t, q, twin, 40), fillUpTo(t, q, src, 40), "quota capacity afterwards")
}

// fill takes permits of src (10 tokens each) until one is refused, at most
// 20, and reports how many it took.
func fill(t *testing.T, q gate.QuotaGate, src string) int {
	return fillUpTo(t, q, src, 20)
}

// fillUpTo is fill with at most max permits.
func fillUpTo(t *testing.T, q gate.QuotaGate, src string, max int) int {
	n := 0
	for ; n < max; n++ {
		_, qd, err := q.Acquire(context.Background(), src, 10)
		require.NoError(t, err)
		if !qd.Allowed {
			break
		}
	}
	return n
}
