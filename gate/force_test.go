package gate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestForceNamesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want gate.Force
		name string
	}{
		{"open", gate.ForceOpen, "open"},
		{"closed", gate.ForceClosed, "closed"},
		{"close", gate.ForceClosed, "closed"},
		{"none", gate.ForceNone, "none"},
		{"reset", gate.ForceNone, "none"},
		{"half_open", gate.ForceHalfOpen, "half_open"},
		{"half-open", gate.ForceHalfOpen, "half_open"},
	} {
		f, err := gate.ParseForce(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, f, tc.in)
		assert.Equal(t, tc.name, f.String())
		assert.True(t, f.Valid())
	}
}

func TestParseForceRejectsUnknownNames(t *testing.T) {
	_, err := gate.ParseForce("ajar")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"ajar"`)
	assert.Contains(t, err.Error(), "legal: open, closed, none, half_open")
	assert.False(t, gate.Force(4).Valid())
	assert.Equal(t, "force(4)", gate.Force(4).String())
}

func TestForceErrorNamesSourceAndLegalValues(t *testing.T) {
	err := &gate.ForceError{Source: "openai", Force: 7}
	assert.Equal(t, `pgw/gate: Force("openai"): unknown force 7 (legal: 0 none, 1 open, 2 closed, 3 half_open)`, err.Error())
}
