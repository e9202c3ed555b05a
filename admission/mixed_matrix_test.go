package admission_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/internal/errs"
)

// TestMixedStatesAcrossBothModes runs one round over sources in different
// states under every combination of QUOTA_FULL and CIRCUIT_OPEN and pins the
// decision: the error and its fields when the policy fails fast, the first
// nap when it waits. CIRCUIT_OPEN decides only when every rejection is a
// gate one; the hint is the earliest certain admission over all sources, 0
// as soon as one of them has no certain wait.
func TestMixedStatesAcrossBothModes(t *testing.T) {
	// Source states: open for a cooldown, HalfOpen with its probe taken,
	// quota full with a certain refill, in-flight full (no certain wait),
	// pacer full.
	setups := map[string]func(t *testing.T, f *fixture){
		"open": func(t *testing.T, f *fixture) { f.open(t, "open") },
		"halfopen": func(t *testing.T, f *fixture) {
			f.open(t, "halfopen")
			f.clk.Advance(cooldown)
			f.takeProbe(t, "halfopen") // another call's probe
		},
		"refill":   func(_ *testing.T, f *fixture) { f.quota.setReject("refill", 2*time.Second) },
		"inflight": func(_ *testing.T, f *fixture) { f.quota.setReject("inflight", 0) },
		"paced":    func(_ *testing.T, f *fixture) { f.pacer.limit["paced"] = 0 },
	}
	// The order of setup: the half-open source first, so that the cooldown
	// it needs has passed before the open source opens.
	order := []string{"halfopen", "open", "refill", "inflight", "paced"}
	rows := []struct {
		sources []string
		allGate bool
		hint    time.Duration
	}{
		{[]string{"open", "halfopen"}, true, 0},
		{[]string{"open", "refill"}, false, 2 * time.Second},
		{[]string{"open", "inflight"}, false, 0},
		{[]string{"open", "paced"}, false, 0},
		{[]string{"halfopen", "refill"}, false, 0},
		{[]string{"refill", "inflight"}, false, 0},
		{[]string{"open", "halfopen", "refill", "inflight", "paced"}, false, 0},
	}
	reasonOf := map[string]string{"open": "circuit_open", "halfopen": "circuit_open", "refill": "rate_limited", "inflight": "rate_limited", "paced": "adaptive_paced"}
	for _, row := range rows {
		for _, qf := range []admission.Mode{admission.FailFast, admission.Wait} {
			for _, co := range []admission.Mode{admission.FailFast, admission.Wait} {
				t.Run(strings.Join(row.sources, "+")+"/QUOTA_FULL="+string(qf)+"/CIRCUIT_OPEN="+string(co), func(t *testing.T) {
					srcs := make([]admission.Source, len(row.sources))
					for i, s := range row.sources {
						srcs[i] = admission.Source{Name: s}
					}
					f := newFixture(t, withModes(qf, co), withSources(srcs...))
					for _, s := range order {
						if slices.Contains(row.sources, s) {
							setups[s](t, f)
						}
					}
					call := f.adm.NewCall(f.stall())
					tk, rej, err := call.Pick(context.Background(), 10)
					require.NoError(t, err)
					require.Nil(t, tk, "no source may run")
					want := map[string]string{}
					for _, s := range row.sources {
						want[s] = reasonOf[s]
					}
					assert.Equal(t, want, rej.Map())
					err = call.OnNoRunnable(context.Background(), rej)
					policy := qf
					if row.allGate {
						policy = co
					}
					if policy == admission.FailFast {
						if row.allGate {
							var coe *errs.CircuitOpenError
							require.ErrorAs(t, err, &coe)
							assert.Equal(t, row.hint, coe.RetryAfter)
							assert.ElementsMatch(t, row.sources, coe.Sources)
						} else {
							var ase *errs.AllSourcesExhausted
							require.ErrorAs(t, err, &ase)
							assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
							assert.Equal(t, row.hint, ase.RetryAfter)
							assert.Equal(t, want, ase.Reasons)
						}
						assert.Empty(t, f.sleeper.taken(), "fails at once")
					} else {
						require.NoError(t, err)
						assert.Equal(t, []time.Duration{row.hint + jitter}, f.sleeper.taken(), "one nap: the earliest certain admission plus jitter")
					}
					for _, s := range row.sources {
						assert.Zero(t, f.quota.held(s), "permit of %s", s)
						assert.Zero(t, f.pacer.holding(s), "pacer slot of %s", s)
					}
				})
			}
		}
	}
}
