package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
)

// jitter is the nap's jitter at the fixtures' rand of 0.5: poll·(0.5+0.25).
const jitter = poll * 3 / 4

// badKey answers every admitted attempt with a fatal outcome (401/403): the
// call never finishes by itself.
func badKey(*admission.Ticket) (admission.Result, bool) {
	return admission.Result{Outcome: gate.Fatal}, false
}

// TestBehaviourMatrix pins every row of the behaviour matrix (USAGE.md) under both values of
// CIRCUIT_OPEN (QUOTA_FULL at its default, wait).
func TestBehaviourMatrix(t *testing.T) {
	type outcome struct {
		t       *testing.T
		f       *fixture
		ticket  *admission.Ticket
		err     error
		elapsed time.Duration
	}
	rows := []struct {
		name    string
		sources []admission.Source
		// setup prepares the gates; it may set f.sleeper.onNap.
		setup    func(t *testing.T, f *fixture)
		attempt  func(*admission.Ticket) (admission.Result, bool)
		failFast func(o outcome)
		wait     func(o outcome)
	}{
		{
			name:  "single source open, cooldown 60s",
			setup: func(t *testing.T, f *fixture) { f.open(t, "s1") },
			failFast: func(o outcome) {
				var coe *errs.CircuitOpenError
				require.ErrorAs(o.t, o.err, &coe)
				assert.Equal(o.t, cooldown, coe.RetryAfter, "the remaining cooldown")
				assert.Equal(o.t, []string{"s1"}, coe.Sources)
				assert.Empty(o.t, o.f.sleeper.taken(), "fails at once")
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.True(o.t, o.ticket.Decision.Probe, "admitted as the probe once the cooldown ended")
				assert.Equal(o.t, []time.Duration{cooldown + jitter}, o.f.sleeper.taken(), "one nap to the end of the cooldown")
				assert.Equal(o.t, gate.Closed, o.f.snapshot(o.t, "s1").State)
			},
		},
		{
			name:    "single source force_open (401/403)",
			setup:   func(t *testing.T, f *fixture) { f.forceOpen(t, "s1") },
			attempt: badKey,
			failFast: func(o outcome) {
				var coe *errs.CircuitOpenError
				require.ErrorAs(o.t, o.err, &coe)
				assert.Empty(o.t, o.f.sleeper.taken())
			},
			wait: func(o outcome) {
				var coe *errs.CircuitOpenError
				require.ErrorAs(o.t, o.err, &coe,
					"waits 60, probes, waits 120, probes: the next cooldown (240s) ends past the stall budget, so the call ends at once")
				assert.Equal(o.t, 4*cooldown, coe.RetryAfter)
				assert.Less(o.t, o.elapsed, window)
				naps := o.f.sleeper.taken()
				require.Len(o.t, naps, 2)
				assert.Equal(o.t, cooldown+jitter, naps[0])
				assert.Equal(o.t, 2*cooldown+jitter, naps[1], "each failed probe doubles the cooldown")
			},
		},
		{
			name:    "multi-source, one open: served by the others",
			sources: []admission.Source{{Name: "s1"}, {Name: "s2"}},
			setup:   func(t *testing.T, f *fixture) { f.open(t, "s1") },
			failFast: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, "s2", o.ticket.Source)
				assert.Empty(o.t, o.f.sleeper.taken())
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, "s2", o.ticket.Source)
				assert.Empty(o.t, o.f.sleeper.taken())
			},
		},
		{
			name:    "multi-source, all open: the earliest to recover",
			sources: []admission.Source{{Name: "s1"}, {Name: "s2"}},
			setup: func(t *testing.T, f *fixture) {
				f.open(t, "s2")
				f.clk.Advance(20 * time.Second)
				f.open(t, "s1") // s2 recovers in 40s, s1 in 60s
			},
			failFast: func(o outcome) {
				var coe *errs.CircuitOpenError
				require.ErrorAs(o.t, o.err, &coe)
				assert.Equal(o.t, 40*time.Second, coe.RetryAfter, "the minimum over the sources")
				assert.ElementsMatch(o.t, []string{"s1", "s2"}, coe.Sources)
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, "s2", o.ticket.Source)
				assert.Equal(o.t, []time.Duration{40*time.Second + jitter}, o.f.sleeper.taken())
			},
		},
		{
			name: "all HalfOpen, a probe in flight",
			setup: func(t *testing.T, f *fixture) {
				f.open(t, "s1")
				f.clk.Advance(cooldown)
				probe := f.takeProbe(t, "s1") // another call's probe
				f.sleeper.onNap = func(n int) {
					if n == 3 { // the probe answers while this call waits
						_, err := f.breaker.Record(context.Background(), "s1", probe, gate.Success)
						require.NoError(t, err)
					}
				}
			},
			failFast: func(o outcome) {
				var coe *errs.CircuitOpenError
				require.ErrorAs(o.t, o.err, &coe)
				assert.Zero(o.t, coe.RetryAfter, "no certain wait: the probe may answer at any moment")
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.False(o.t, o.ticket.Decision.Probe, "admitted Closed right after the probe succeeded")
				assert.Equal(o.t, []time.Duration{jitter, jitter, jitter}, o.f.sleeper.taken(), "poll-interval naps, never the lease length")
			},
		},
		{
			name: "quota full: QUOTA_FULL governs (wait), CIRCUIT_OPEN does not",
			setup: func(t *testing.T, f *fixture) {
				f.quota.setReject("s1", 2*time.Second)
				f.sleeper.onNap = func(int) { f.quota.clear("s1") }
			},
			failFast: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, []time.Duration{2*time.Second + jitter}, o.f.sleeper.taken())
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, []time.Duration{2*time.Second + jitter}, o.f.sleeper.taken())
			},
		},
		{
			name: "AIMD over its window: QUOTA_FULL governs (wait), CIRCUIT_OPEN does not",
			setup: func(t *testing.T, f *fixture) {
				f.pacer.limit["s1"] = 0
				f.sleeper.onNap = func(int) { f.pacer.mu.Lock(); delete(f.pacer.limit, "s1"); f.pacer.mu.Unlock() }
			},
			failFast: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, []time.Duration{jitter}, o.f.sleeper.taken(), "no certain wait: one poll")
			},
			wait: func(o outcome) {
				require.NoError(o.t, o.err)
				assert.Equal(o.t, []time.Duration{jitter}, o.f.sleeper.taken())
			},
		},
	}
	for _, row := range rows {
		for _, mode := range []admission.Mode{admission.FailFast, admission.Wait} {
			t.Run(row.name+"/CIRCUIT_OPEN="+string(mode), func(t *testing.T) {
				opts := []fixtureOpt{withModes(admission.Wait, mode), withRand(func() float64 { return 0.5 })}
				if row.sources != nil {
					opts = append(opts, withSources(row.sources...))
				}
				f := newFixture(t, opts...)
				row.setup(t, f)
				attempt := row.attempt
				if attempt == nil {
					attempt = succeed
				}
				start := f.clk.Now()
				tk, err := f.run(context.Background(), f.adm.NewCall(f.stall()), attempt)
				o := outcome{t: t, f: f, ticket: tk, err: err, elapsed: f.clk.Now().Sub(start)}
				if mode == admission.FailFast {
					row.failFast(o)
				} else {
					row.wait(o)
				}
				f.assertNothingHeld(t)
			})
		}
	}
}

// TestQuotaFullMatrix pins the QUOTA_FULL column: fail_fast reports
// quota_exhausted with every source's reason whatever CIRCUIT_OPEN says,
// whenever at least one rejection is not a gate rejection.
func TestQuotaFullMatrix(t *testing.T) {
	for _, circuit := range []admission.Mode{admission.FailFast, admission.Wait} {
		t.Run("QUOTA_FULL=fail_fast/CIRCUIT_OPEN="+string(circuit), func(t *testing.T) {
			f := newFixture(t, withModes(admission.FailFast, circuit),
				withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}, admission.Source{Name: "s3"}))
			f.open(t, "s1")
			f.quota.setReject("s2", time.Second)
			f.pacer.limit["s3"] = 0
			_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
			var ase *errs.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, errs.ReasonQuotaExhausted, ase.Reason)
			assert.Equal(t, map[string]string{"s1": "circuit_open", "s2": "rate_limited", "s3": "adaptive_paced"}, ase.Reasons)
			assert.Empty(t, f.sleeper.taken())
			f.assertNothingHeld(t)
		})
	}
}

func (f *fixture) forceOpen(t testing.TB, source string) {
	t.Helper()
	d, err := f.breaker.TryEnter(context.Background(), source)
	require.NoError(t, err)
	_, err = f.breaker.Record(context.Background(), source, d, gate.Fatal)
	require.NoError(t, err)
}

// assertNothingHeld checks that no permit, pacer slot or probe lease of this
// call is still held.
func (f *fixture) assertNothingHeld(t *testing.T) {
	t.Helper()
	for _, s := range []string{"s1", "s2", "s3"} {
		assert.Zero(t, f.quota.held(s), "permit of %s", s)
		assert.Zero(t, f.pacer.holding(s), "pacer slot of %s", s)
	}
}
