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

// AdmitFactory returns a breaker gate with policy p and a quota gate with
// limits, sharing one store, and the Clock that drives their time. The quota
// gate must implement gate.Admitter and combine with the breaker.
type AdmitFactory func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, Clock)

// RunAdmit pins gate.Admitter to its definition: for every case, Admit on
// one source answers and leaves both gates exactly as TryEnter, then
// Acquire, then Record(Released) on a quota rejection, do on a twin source
// with the same history — the same decision, the same quota answer, the
// same breaker record and the same quota capacity afterwards.
func RunAdmit(t *testing.T, newGates AdmitFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("a%x%x", time.Now().UnixNano()&0xffffff, run)
	policy := basePolicy()
	policy.ConsecutiveFailures = 1
	longLease(&policy)
	for _, c := range []struct {
		name   string
		limits gate.Limits
		// before brings the source to the case's state with plain
		// operations; cooled waits out the cooldown after it, and taken
		// then takes the probe lease as another caller would.
		before        func(h *admitHarness, src string)
		cooled, taken bool
	}{
		{name: "ClosedAdmitted", limits: gate.Limits{RPM: 10, MaxInFlight: 2}},
		{name: "ClosedRateLimited", limits: gate.Limits{RPM: 1}, before: (*admitHarness).takePermit},
		{name: "ClosedInFlightFull", limits: gate.Limits{MaxInFlight: 1}, before: (*admitHarness).takePermit},
		{name: "OpenQuotaUntouched", limits: gate.Limits{MaxInFlight: 1}, before: (*admitHarness).trip},
		{name: "ProbeGrantedAndAdmitted", limits: gate.Limits{MaxInFlight: 1}, before: (*admitHarness).trip, cooled: true},
		{name: "ProbeGivenBackOnQuotaRejection", limits: gate.Limits{MaxInFlight: 1}, cooled: true,
			before: func(h *admitHarness, src string) {
				h.trip(src)
				h.takePermit(src)
			}},
		{name: "HalfOpenRejected", limits: gate.Limits{MaxInFlight: 1}, before: (*admitHarness).trip, cooled: true, taken: true},
	} {
		t.Run("Admit/"+c.name, func(t *testing.T) {
			combined, separate := sourceName(nonce, c.name, "c"), sourceName(nonce, c.name, "s")
			b, q, clk := newGates(t, policy, map[string]gate.Limits{combined: c.limits, separate: c.limits})
			adm, ok := q.(gate.Admitter)
			require.True(t, ok, "the quota gate does not implement gate.Admitter")
			h := &admitHarness{t: t, b: b, q: q}
			if c.before != nil {
				c.before(h, combined)
				c.before(h, separate)
			}
			if c.cooled {
				clk.Advance(policy.Cooldown + 2*clk.Slack())
			}
			if c.taken {
				require.True(t, h.enter(combined).Probe)
				require.True(t, h.enter(separate).Probe)
			}
			ctx := context.Background()
			d1, p1, qd1, ok, err := adm.Admit(ctx, b, combined, 1)
			require.NoError(t, err)
			require.True(t, ok, "Admit does not combine with the factory's breaker")

			d2, err := b.TryEnter(ctx, separate)
			require.NoError(t, err)
			var p2 gate.Permit
			var qd2 gate.QuotaDecision
			if d2.Allowed {
				p2, qd2, err = q.Acquire(ctx, separate, 1)
				require.NoError(t, err)
				if !qd2.Allowed {
					_, err = b.Record(ctx, separate, d2, gate.Released)
					require.NoError(t, err)
				}
			}

			assert.Equal(t, d2.Allowed, d1.Allowed, "decision allowed")
			assert.Equal(t, d2.State, d1.State, "decision state")
			assert.Equal(t, d2.Probe, d1.Probe, "decision probe")
			assert.Equal(t, d2.Generation, d1.Generation, "decision generation")
			assert.Equal(t, d2.Token, d1.Token, "decision token")
			assert.Equal(t, d2.Forced, d1.Forced, "decision override")
			assert.InDelta(t, float64(d2.RetryAfter), float64(d1.RetryAfter), float64(time.Second), "decision RetryAfter")
			assert.Equal(t, qd2.Allowed, qd1.Allowed, "quota allowed")
			assert.Equal(t, qd2.Limit, qd1.Limit, "quota limit")
			assert.InDelta(t, float64(qd2.RetryAfter), float64(qd1.RetryAfter), float64(time.Second), "quota RetryAfter")
			assert.Equal(t, p2 != (gate.Permit{}), p1 != (gate.Permit{}), "permit granted")
			if !d1.Allowed {
				assert.Zero(t, qd1, "the quota is not asked when the breaker rejects")
				assert.Zero(t, p1)
			}

			// The records are alike afterwards.
			s1, s2 := h.snap(combined), h.snap(separate)
			assert.Equal(t, s2.State, s1.State, "state afterwards")
			assert.Equal(t, s2.Generation, s1.Generation, "generation afterwards")
			assert.Equal(t, s2.ProbesInFlight, s1.ProbesInFlight, "probe leases afterwards")
			// And so is the quota: one more Acquire answers alike.
			_, a1, err := q.Acquire(ctx, combined, 1)
			require.NoError(t, err)
			_, a2, err := q.Acquire(ctx, separate, 1)
			require.NoError(t, err)
			assert.Equal(t, a2.Allowed, a1.Allowed, "quota capacity afterwards")
			assert.Equal(t, a2.Limit, a1.Limit, "quota limit afterwards")
		})
	}
}

type admitHarness struct {
	t *testing.T
	b gate.ProviderGate
	q gate.QuotaGate
}

func (h *admitHarness) enter(src string) gate.Decision {
	d, err := h.b.TryEnter(context.Background(), src)
	require.NoError(h.t, err)
	return d
}

// trip opens src's breaker (ConsecutiveFailures is 1).
func (h *admitHarness) trip(src string) {
	d := h.enter(src)
	require.True(h.t, d.Allowed)
	_, err := h.b.Record(context.Background(), src, d, gate.Failure)
	require.NoError(h.t, err)
}

// takePermit takes one permit of src and keeps it.
func (h *admitHarness) takePermit(src string) {
	_, qd, err := h.q.Acquire(context.Background(), src, 1)
	require.NoError(h.t, err)
	require.True(h.t, qd.Allowed)
}

func (h *admitHarness) snap(src string) gate.Snapshot {
	s, err := h.b.Snapshot(context.Background(), src)
	require.NoError(h.t, err)
	return s
}
