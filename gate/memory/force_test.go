package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// TestBreakerForceContract runs the operator-override contract (gate.Forcer)
// against the memory gate on a fake clock.
func TestBreakerForceContract(t *testing.T) {
	contracttest.RunBreakerForce(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		g, err := memory.NewBreaker(p, memory.WithClock(clk))
		require.NoError(t, err)
		return g, clk
	})
}

// TestForceSuiteSkipsAGateWithoutForcer: a backend without the optional port
// is not failed by the suite.
func TestForceSuiteSkipsAGateWithoutForcer(t *testing.T) {
	contracttest.RunBreakerForce(t, func(t *testing.T, _ gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		return gate.Noop{}, contracttest.NewFakeClock()
	})
}
