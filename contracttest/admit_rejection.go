package contracttest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// admitRejectionStep is one operation of runAdmitTakesNothing's history.
type admitRejectionStep int

const (
	arTake          admitRejectionStep = iota // take one permit of estTokens and keep it
	arTrip                                    // open the breaker (ConsecutiveFailures is 1)
	arCool                                    // wait out the cooldown
	arForce                                   // force the record open (the gate must be a gate.Forcer)
	arForceClosed                             // force the record closed
	arForceHalfOpen                           // force the record half-open
)

// runAdmitTakesNothing pins the half of gate.Admitter that a single probe of
// capacity cannot see: a rejection by either gate takes nothing from the
// other, and from no other limit of the same gate. Twin sources with several
// limits each are brought to the same state; the combined source is asked
// with Admit, the separate one with TryEnter, Acquire and Record(Released)
// on a quota rejection. Then every permit held is released and each source
// is drained with Acquire until it refuses: a combined admission that spent
// a request of the RPM while the in-flight limit refused it (or tokens while
// the RPM refused it), or kept a probe lease, drains differently from its
// twin. An estimate that no wait could admit is refused with the same
// *gate.TokensError and leaves the breaker's probe free.
func runAdmitTakesNothing(t *testing.T, newGates AdmitFactory, nonce string, policy gate.Policy) {
	const est = 10
	for _, c := range []struct {
		name   string
		limits gate.Limits
		steps  []admitRejectionStep
		est    int64
		// errs: Admit and Acquire are refused with a *gate.TokensError.
		errs bool
	}{
		{name: "InFlightFullSpendsNoRequest", limits: gate.Limits{RPM: 3, TPM: 100, MaxInFlight: 1}, steps: []admitRejectionStep{arTake}, est: est},
		{name: "TokensShortSpendNoRequestNorSlot", limits: gate.Limits{RPM: 3, TPM: 15, MaxInFlight: 2}, steps: []admitRejectionStep{arTake}, est: est},
		{name: "RequestsSpentTakeNoTokensNorSlot", limits: gate.Limits{RPM: 1, TPM: 100, MaxInFlight: 2}, steps: []admitRejectionStep{arTake}, est: est},
		{name: "ProbeGivenBackOnTokensRejection", limits: gate.Limits{RPM: 5, TPM: 15, MaxInFlight: 3}, steps: []admitRejectionStep{arTrip, arTake, arCool}, est: est},
		{name: "ProbeGivenBackOnRequestsRejection", limits: gate.Limits{RPM: 1, TPM: 100, MaxInFlight: 3}, steps: []admitRejectionStep{arTrip, arTake, arCool}, est: est},
		{name: "OpenTakesNothing", limits: gate.Limits{RPM: 3, TPM: 100, MaxInFlight: 2}, steps: []admitRejectionStep{arTrip}, est: est},
		{name: "ForcedOpenTakesNothing", limits: gate.Limits{RPM: 3, TPM: 100, MaxInFlight: 2}, steps: []admitRejectionStep{arForce}, est: est},
		{name: "ForcedClosedOpenBreakerGivenBackOnTokensRejection", limits: gate.Limits{RPM: 5, TPM: 15, MaxInFlight: 3}, steps: []admitRejectionStep{arTrip, arForceClosed, arTake}, est: est},
		{name: "ForcedHalfOpenProbeGivenBackOnInFlightRejection", limits: gate.Limits{RPM: 5, TPM: 100, MaxInFlight: 1}, steps: []admitRejectionStep{arForceHalfOpen, arTake}, est: est},
		{name: "EstimateAboveTheTPMIsRefused", limits: gate.Limits{RPM: 3, TPM: 15, MaxInFlight: 2}, steps: []admitRejectionStep{arTrip, arCool}, est: 16, errs: true},
	} {
		t.Run("AdmitTakesNothing/"+c.name, func(t *testing.T) {
			combined, separate := sourceName(nonce, "tn-"+c.name, "c"), sourceName(nonce, "tn-"+c.name, "s")
			b, q, clk := newGates(t, policy, map[string]gate.Limits{combined: c.limits, separate: c.limits})
			adm, ok := q.(gate.Admitter)
			require.True(t, ok, "the quota gate does not implement gate.Admitter")
			h := newAdmitHarness(t, b, q)
			ctx := context.Background()
			held := map[string][]gate.Permit{}
			for _, s := range c.steps {
				for _, src := range []string{combined, separate} {
					switch s {
					case arTake:
						p, qd, err := q.Acquire(ctx, src, est)
						require.NoError(t, err)
						require.True(t, qd.Allowed, "the history's permit of %s", src)
						held[src] = append(held[src], p)
					case arTrip:
						h.trip(src)
					case arForce, arForceClosed, arForceHalfOpen:
						f, ok := b.(gate.Forcer)
						if !ok {
							t.Skip("the breaker gate is not a gate.Forcer")
						}
						force := map[admitRejectionStep]gate.Force{arForce: gate.ForceOpen, arForceClosed: gate.ForceClosed, arForceHalfOpen: gate.ForceHalfOpen}[s]
						require.NoError(t, f.Force(ctx, src, force))
					}
				}
				if s == arCool {
					clk.Advance(policy.Cooldown + 2*clk.Slack())
				}
			}

			d1, p1, qd1, ok, err1 := adm.Admit(ctx, b, combined, c.est)
			require.True(t, ok, "Admit does not combine with the factory's breaker")
			d2, err2 := b.TryEnter(ctx, separate)
			require.NoError(t, err2)
			var p2 gate.Permit
			var qd2 gate.QuotaDecision
			if d2.Allowed {
				p2, qd2, err2 = q.Acquire(ctx, separate, c.est)
				if err2 != nil || !qd2.Allowed {
					_, err := b.Record(ctx, separate, d2, gate.Released)
					require.NoError(t, err)
				}
			}
			if c.errs {
				var te1, te2 *gate.TokensError
				require.True(t, errors.As(err1, &te1), "Admit of an estimate above the TPM: %v, want a *gate.TokensError", err1)
				require.True(t, errors.As(err2, &te2), "Acquire of an estimate above the TPM: %v", err2)
				assert.Zero(t, p1, "Admit refused with an error must hold no permit")
			} else {
				require.NoError(t, err1)
				require.NoError(t, err2)
				assert.Equal(t, d2.Allowed, d1.Allowed, "decision allowed")
				assert.Equal(t, d2.State, d1.State, "decision state")
				assert.Equal(t, d2.Probe, d1.Probe, "decision probe")
				assert.Equal(t, d2.Forced, d1.Forced, "decision override")
				assert.Equal(t, qd2.Allowed, qd1.Allowed, "quota allowed")
				assert.Equal(t, qd2.Limit, qd1.Limit, "quota limit")
				assert.Equal(t, p2 != (gate.Permit{}), p1 != (gate.Permit{}), "permit granted")
			}
			if p1 != (gate.Permit{}) {
				held[combined] = append(held[combined], p1)
			}
			if p2 != (gate.Permit{}) {
				held[separate] = append(held[separate], p2)
			}

			// The breakers are alike: the same state and probe leases.
			// (An estimate refused before anything was asked may leave the
			// record where it was, Open with its cooldown over, where the
			// separate path's TryEnter made it HalfOpen: the next
			// admission finds the probe free either way.)
			s1, s2 := h.snap(combined), h.snap(separate)
			if !c.errs {
				assert.Equal(t, s2.State, s1.State, "state afterwards")
			}
			assert.Equal(t, s2.ProbesInFlight, s1.ProbesInFlight, "probe leases afterwards")
			if c.errs {
				e1, e2 := h.enter(combined), h.enter(separate)
				assert.Equal(t, e2.Allowed, e1.Allowed, "the next TryEnter after a refused estimate: allowed")
				assert.Equal(t, e2.Probe, e1.Probe, "the next TryEnter after a refused estimate: probe")
				for src, d := range map[string]gate.Decision{combined: e1, separate: e2} {
					if d.Allowed {
						_, err := b.Record(ctx, src, d, gate.Released)
						require.NoError(t, err)
					}
				}
			}

			// And so are the quotas, limit by limit: with every slot given
			// back, each admits the same number of one-token requests
			// (each released at once) before the same limit refuses.
			drain := func(src string) (n int, limit string) {
				for _, p := range held[src] {
					require.NoError(t, q.Release(ctx, p))
				}
				for n = 0; n < c.limits.RPM+2; n++ {
					p, qd, err := q.Acquire(ctx, src, 1)
					require.NoError(t, err)
					if !qd.Allowed {
						return n, qd.Limit
					}
					require.NoError(t, q.Release(ctx, p))
				}
				return n, ""
			}
			n1, l1 := drain(combined)
			n2, l2 := drain(separate)
			assert.Equal(t, n2, n1, "estimates admitted afterwards: Admit's rejection took something (separate path refused by %q, combined by %q)", l2, l1)
			assert.Equal(t, l2, l1, "the limit that refuses afterwards")
		})
	}
}
