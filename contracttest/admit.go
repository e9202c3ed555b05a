package contracttest

import (
	"context"
	"fmt"
	"slices"
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
// same breaker record and the same quota capacity afterwards. Generations and
// tokens compare by their place in each source's own sequence, not by value
// (a backend may start a record's numbers anywhere, as the Redis gate does
// from the server's clock), and every number a source hands out must be above
// all it handed out before. Sources with several limits then pin that a
// rejection by either gate takes nothing from the other nor from another
// limit of the same gate, by draining each twin afterwards.
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
			h := newAdmitHarness(t, b, q)
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
			h.nums.decision(combined, d1)

			d2, err := b.TryEnter(ctx, separate)
			require.NoError(t, err)
			h.nums.decision(separate, d2)
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
			assert.Equal(t, h.nums.rank(separate, d2.Generation), h.nums.rank(combined, d1.Generation), "decision generation")
			assert.Equal(t, h.nums.token(separate, d2), h.nums.token(combined, d1), "decision token")
			if !d1.Allowed && !d2.Allowed {
				assert.Equal(t, d2.Token, d1.Token, "token of a decision not allowed")
			}
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
			assert.Equal(t, h.nums.rank(separate, s2.Generation), h.nums.rank(combined, s1.Generation), "generation afterwards")
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
	runDoneContext(t, newGates, nonce, policy)
	runAdmitTakesNothing(t, newGates, nonce, policy)
}

// runDoneContext pins that an admission asked with a ctx already done is
// refused with the ctx's error and takes nothing: TryEnter, Acquire (on a
// limited and on an unlimited source) and Admit, whether the record is
// Closed or due for a probe. Afterwards the source admits exactly as if the
// refused calls had never been made: the probe lease and the one in-flight
// slot are still there.
func runDoneContext(t *testing.T, newGates AdmitFactory, nonce string, policy gate.Policy) {
	for _, c := range []struct {
		name   string
		cooled bool // the breaker is due for a probe
	}{{name: "Closed"}, {name: "ProbeDue", cooled: true}} {
		t.Run("DoneContext/"+c.name, func(t *testing.T) {
			src, free := sourceName(nonce, "done-"+c.name, ""), sourceName(nonce, "done-"+c.name, "unlimited")
			limits := gate.Limits{RPM: 1, MaxInFlight: 1}
			b, q, clk := newGates(t, policy, map[string]gate.Limits{src: limits})
			h := newAdmitHarness(t, b, q)
			if c.cooled {
				h.trip(src)
				clk.Advance(policy.Cooldown + 2*clk.Slack())
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()
			refused := func(what string, err error) {
				t.Helper()
				require.Error(t, err, "%s with a done ctx must not be granted", what)
				assert.ErrorIs(t, err, context.Canceled, "%s with a done ctx reports the ctx's error", what)
			}
			d, err := b.TryEnter(done, src)
			refused("TryEnter", err)
			assert.False(t, d.Allowed, "TryEnter with a done ctx: decision allowed")
			p, qd, err := q.Acquire(done, src, 1)
			refused("Acquire", err)
			assert.False(t, qd.Allowed, "Acquire with a done ctx: permit granted")
			assert.Zero(t, p, "Acquire with a done ctx: permit")
			_, qd, err = q.Acquire(done, free, 1)
			refused("Acquire of an unlimited source", err)
			assert.False(t, qd.Allowed, "Acquire of an unlimited source with a done ctx: permit granted")
			if adm, ok := q.(gate.Admitter); ok {
				d, p, qd, _, err := adm.Admit(done, b, src, 1)
				refused("Admit", err)
				assert.False(t, d.Allowed, "Admit with a done ctx: decision allowed")
				assert.False(t, qd.Allowed, "Admit with a done ctx: permit granted")
				assert.Zero(t, p, "Admit with a done ctx: permit")
			}

			// Nothing was taken: the probe (or Closed admission), the one
			// request of the RPM and the one in-flight slot are all there.
			d = h.enter(src)
			require.True(t, d.Allowed, "the source admits after the refused calls")
			assert.Equal(t, c.cooled, d.Probe, "the probe lease is still free")
			assert.Equal(t, 0, h.snap(src).ProbesInFlight-boolInt(d.Probe), "no probe lease leaked")
			_, qd, err = q.Acquire(context.Background(), src, 1)
			require.NoError(t, err)
			assert.True(t, qd.Allowed, "the RPM's one request and the one slot are still there")
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type admitHarness struct {
	t    *testing.T
	b    gate.ProviderGate
	q    gate.QuotaGate
	nums *numbering
}

func newAdmitHarness(t *testing.T, b gate.ProviderGate, q gate.QuotaGate) *admitHarness {
	return &admitHarness{t: t, b: b, q: q, nums: &numbering{t: t, seen: map[string][]uint64{}}}
}

func (h *admitHarness) enter(src string) gate.Decision {
	d, err := h.b.TryEnter(context.Background(), src)
	require.NoError(h.t, err)
	h.nums.decision(src, d)
	return d
}

// numbering places each source's generations and tokens in that source's
// own sequence, so that twin sources compare by place rather than by value.
// A number not seen before must be above every number the source handed out
// before ("Generations" in package gate; generations and tokens grow
// together), so a backend that repeats or reorders them still fails.
type numbering struct {
	t    *testing.T
	seen map[string][]uint64 // per source, ascending
}

// see places the numbers, in the order the source handed them out.
func (n *numbering) see(src string, vs ...uint64) {
	n.t.Helper()
	for _, v := range vs {
		s := n.seen[src]
		if slices.Contains(s, v) {
			continue
		}
		if len(s) > 0 && v < s[len(s)-1] {
			n.t.Errorf("%s handed out %d after %d: its generations and tokens must only grow", src, v, s[len(s)-1])
		}
		n.seen[src] = append(s, v)
		slices.Sort(n.seen[src])
	}
}

// decision places d's generation and, when it was allowed, its token.
func (n *numbering) decision(src string, d gate.Decision) {
	n.t.Helper()
	n.see(src, d.Generation)
	if d.Allowed {
		n.see(src, d.Token)
	}
}

// rank is v's place among src's numbers (0 the first), placing it first if
// it is new.
func (n *numbering) rank(src string, v uint64) int {
	n.t.Helper()
	n.see(src, v)
	return slices.Index(n.seen[src], v)
}

// token is d's token's place, or -1 for a decision that was not allowed,
// whose Token fences nothing (RunAdmit compares those by value).
func (n *numbering) token(src string, d gate.Decision) int {
	n.t.Helper()
	if !d.Allowed {
		return -1
	}
	return n.rank(src, d.Token)
}

// trip opens src's breaker (ConsecutiveFailures is 1).
func (h *admitHarness) trip(src string) {
	d := h.enter(src)
	require.True(h.t, d.Allowed)
	u, err := h.b.Record(context.Background(), src, d, gate.Failure)
	require.NoError(h.t, err)
	h.nums.see(src, u.Generation)
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
	h.nums.see(src, s.Generation)
	return s
}
