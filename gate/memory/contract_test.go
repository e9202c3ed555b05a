package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// TestBreakerContract runs the shared breaker contract (gate/doc.go, contracttest.RunBreaker)
// against the memory gate on a fake clock, so every duration is exact.
func TestBreakerContract(t *testing.T) {
	contracttest.RunBreaker(t, func(t *testing.T, p gate.Policy) (gate.ProviderGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		g, err := memory.NewBreaker(p, memory.WithClock(clk))
		require.NoError(t, err)
		return g, clk
	})
}
