package gate_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// A failure-rate setting without a Window would silently do nothing: it is
// rejected, naming the field, as WindowFailures without Window is.
func TestPolicyRejectsWindowSettingsWithoutAWindow(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    gate.Policy
		want []string
	}{
		{"rate", gate.Policy{WindowFailureRate: 0.5}, []string{"WindowFailureRate=0.5 (legal: 0 unless Window is set)"}},
		{"NaN rate", gate.Policy{WindowFailureRate: math.NaN()}, []string{"WindowFailureRate=NaN (legal: 0 unless Window is set)"}},
		{"min calls", gate.Policy{WindowMinCalls: 10}, []string{"WindowMinCalls=10 (legal: 0 unless Window is set)"}},
		{"all three", gate.Policy{WindowMinCalls: 4, WindowFailureRate: 0.5, WindowFailures: 2}, []string{
			"WindowMinCalls=4", "WindowFailureRate=0.5", "WindowFailures=2",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			var pe *gate.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Len(t, pe.Problems, len(tt.want), "%v", err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
	assert.NoError(t, gate.Policy{Window: time.Second, WindowMinCalls: 4, WindowFailureRate: 0.5}.Validate())
}

// Policy durations count in whole µs (WithDefaults drops a finer part), and
// the truncation never turns an invalid duration into a valid one or into
// the default: Validate judges, and reports, the values as given.
func TestPolicyDurationsTruncateToMicrosecondsWithoutHidingBadValues(t *testing.T) {
	p := gate.Policy{Cooldown: time.Second + 999*time.Nanosecond, MaxCooldown: 2*time.Second + 1, ProbeTTL: 3*time.Second + 500}
	require.NoError(t, p.Validate())
	d := p.WithDefaults()
	assert.Equal(t, time.Second, d.Cooldown)
	assert.Equal(t, 2*time.Second, d.MaxCooldown)
	assert.Equal(t, 3*time.Second, d.ProbeTTL)
	assert.Equal(t, 600*time.Second, gate.Policy{Cooldown: time.Second + 1}.WithDefaults().MaxCooldown)

	for _, tt := range []struct {
		p    gate.Policy
		want string
	}{
		{gate.Policy{Cooldown: -1}, "Cooldown=-1ns"},
		{gate.Policy{Cooldown: 500}, "Cooldown=500ns"},
		{gate.Policy{ProbeTTL: -1}, "ProbeTTL=-1ns"},
		{gate.Policy{ProbeTTL: 999}, "ProbeTTL=999ns"},
		{gate.Policy{Cooldown: time.Second, MaxCooldown: 999}, "MaxCooldown=999ns"},
	} {
		assert.ErrorContains(t, tt.p.Validate(), tt.want)
	}
}
