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
	assert.ErrorContains(t, err, "Policy.CooldownMultiplier=NaN (legal: ≥ 1")
	assert.ErrorContains(t, err, "Policy.WindowFailureRate=NaN (legal: in (0, 1]")
}
