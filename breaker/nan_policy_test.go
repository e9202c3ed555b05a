package breaker_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// A NaN in a policy's float fields is a configuration mistake, named with
// what is legal, not a breaker whose rate rule never trips or whose grown
// cooldown is undefined.
func TestNewRejectsNaNPolicyFloats(t *testing.T) {
	_, err := breaker.New("api", breaker.Config{Policy: gate.Policy{
		CooldownMultiplier: math.NaN(),
		Window:             time.Second, WindowFailureRate: math.NaN(),
	}})
	ce, ok := errors.AsType[*breaker.ConfigError](err)
	require.True(t, ok, "got %v", err)
	assert.Len(t, ce.Problems, 2)
	assert.ErrorContains(t, err, "Policy.CooldownMultiplier=NaN (legal: in [1, 1000]")
	assert.ErrorContains(t, err, "Policy.WindowFailureRate=NaN (legal: in (0, 1]")
}

// So is an infinite one: a multiplier of +Inf would grow a cooldown past
// anything a duration holds, and a Redis gate could not read it.
func TestNewRejectsInfinitePolicyFloats(t *testing.T) {
	_, err := breaker.New("api", breaker.Config{Policy: gate.Policy{
		CooldownMultiplier: math.Inf(1),
		Window:             time.Second, WindowFailureRate: math.Inf(-1),
	}})
	ce, ok := errors.AsType[*breaker.ConfigError](err)
	require.True(t, ok, "got %v", err)
	assert.Len(t, ce.Problems, 2)
	assert.ErrorContains(t, err, "Policy.CooldownMultiplier=+Inf (legal: in [1, 1000]")
	assert.ErrorContains(t, err, "Policy.WindowFailureRate=-Inf (legal: in (0, 1]")
}
