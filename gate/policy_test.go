package gate_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestPolicyValidateNamesEveryBadField(t *testing.T) {
	tests := []struct {
		name   string
		p      gate.Policy
		fields []string
	}{
		{"zero is valid", gate.Policy{}, nil},
		{"negative counts", gate.Policy{ConsecutiveFailures: -2, SuccessThreshold: -2, HalfOpenProbes: -3},
			[]string{"ConsecutiveFailures=-2", "SuccessThreshold=-2", "HalfOpenProbes=-3"}},
		{"cooldown below a millisecond", gate.Policy{Cooldown: time.Microsecond}, []string{"Cooldown=1µs"}},
		{"max cooldown below cooldown", gate.Policy{Cooldown: time.Minute, MaxCooldown: time.Second},
			[]string{"MaxCooldown=1s"}},
		{"multiplier below one", gate.Policy{CooldownMultiplier: 0.5}, []string{"CooldownMultiplier=0.5"}},
		{"window without rate", gate.Policy{Window: time.Second}, []string{"WindowFailureRate=0"}},
		{"window rate above one", gate.Policy{Window: time.Second, WindowFailureRate: 1.5}, []string{"WindowFailureRate=1.5"}},
		{"window too short", gate.Policy{Window: time.Millisecond, WindowFailureRate: 0.5}, []string{"Window=1ms"}},
		{"window failures without window", gate.Policy{WindowFailures: 3}, []string{"WindowFailures=3"}},
		{"negative window failures", gate.Policy{Window: time.Second, WindowFailureRate: 0.5, WindowFailures: -1}, []string{"WindowFailures=-1"}},
		{"window failures with rate above one", gate.Policy{Window: time.Second, WindowFailures: 2, WindowFailureRate: 2}, []string{"WindowFailureRate=2"}},
		{"window failures without rate", gate.Policy{Window: time.Second, WindowFailures: 2}, nil},
		{"consecutive failures disabled", gate.Policy{ConsecutiveFailures: gate.Disabled}, nil},
		{"half-open calls below success threshold", gate.Policy{SuccessThreshold: 3, HalfOpenCalls: 2}, []string{"HalfOpenCalls=2"}},
		{"negative half-open calls", gate.Policy{HalfOpenCalls: -1}, []string{"HalfOpenCalls=-1"}},
		{"negative probe ttl", gate.Policy{ProbeTTL: -time.Second}, []string{"ProbeTTL=-1s"}},
		{"NaN multiplier", gate.Policy{CooldownMultiplier: math.NaN()}, []string{"CooldownMultiplier=NaN"}},
		{"NaN window rate", gate.Policy{Window: time.Second, WindowFailureRate: math.NaN()}, []string{"WindowFailureRate=NaN"}},
		{"NaN window rate with window failures", gate.Policy{Window: time.Second, WindowFailures: 2, WindowFailureRate: math.NaN()},
			[]string{"WindowFailureRate=NaN"}},
		{"+Inf multiplier", gate.Policy{CooldownMultiplier: math.Inf(1)}, []string{"CooldownMultiplier=+Inf (legal: in [1, 1000]"}},
		{"-Inf multiplier", gate.Policy{CooldownMultiplier: math.Inf(-1)}, []string{"CooldownMultiplier=-Inf (legal: in [1, 1000]"}},
		{"absurd multiplier", gate.Policy{CooldownMultiplier: 1e300}, []string{"CooldownMultiplier=1e+300 (legal: in [1, 1000]"}},
		{"largest multiplier", gate.Policy{CooldownMultiplier: gate.MaxCooldownMultiplier}, nil},
		{"+Inf window rate", gate.Policy{Window: time.Second, WindowFailureRate: math.Inf(1)}, []string{"WindowFailureRate=+Inf"}},
		{"-Inf window rate with window failures", gate.Policy{Window: time.Second, WindowFailures: 2, WindowFailureRate: math.Inf(-1)},
			[]string{"WindowFailureRate=-Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.fields == nil {
				assert.NoError(t, err)
				return
			}
			var pe *gate.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Len(t, pe.Problems, len(tt.fields))
			for _, f := range tt.fields {
				assert.Contains(t, err.Error(), f)
			}
			assert.Contains(t, err.Error(), "legal:")
		})
	}
}

func TestPolicyWithDefaultsKeepsSetFields(t *testing.T) {
	p := gate.Policy{Cooldown: 10 * time.Minute}.WithDefaults()
	assert.Equal(t, 10*time.Minute, p.Cooldown)
	assert.Equal(t, 10*time.Minute, p.MaxCooldown, "MaxCooldown never defaults below Cooldown")
	assert.Equal(t, 10*time.Minute, p.ProbeTTL)
}

func TestDefaultProbeTTL(t *testing.T) {
	assert.Equal(t, 600*time.Second, gate.DefaultProbeTTL(60*time.Second, 300*time.Second), "2 × slowest timeout")
	assert.Equal(t, 60*time.Second, gate.DefaultProbeTTL(60*time.Second, 10*time.Second), "cooldown")
	assert.Equal(t, 7*time.Second, gate.DefaultProbeTTL(time.Second, 2*time.Second), "timeout + 5 s")
}

func TestStringsAndValidity(t *testing.T) {
	assert.Equal(t, "closed", gate.Closed.String())
	assert.Equal(t, "open", gate.Open.String())
	assert.Equal(t, "half_open", gate.HalfOpen.String())
	assert.Equal(t, "state(9)", gate.State(9).String())
	assert.Equal(t, "released", gate.Released.String())
	assert.False(t, gate.Outcome(0).Valid(), "the zero outcome is invalid, never a silent success")
	assert.True(t, gate.Fatal.Valid())
}

func TestNoopAlwaysAllows(t *testing.T) {
	var g gate.ProviderGate = gate.Noop{}
	ctx := context.Background()
	for range 3 {
		d, err := g.TryEnter(ctx, "s")
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		u, err := g.Record(ctx, "s", d, gate.Fatal)
		require.NoError(t, err)
		assert.Equal(t, gate.Closed, u.State)
	}
	ra, err := g.RetryAfter(ctx, []string{"s"})
	require.NoError(t, err)
	assert.Zero(t, ra)
}
