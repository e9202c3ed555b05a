package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// TestQuotaContract runs the shared quota contract (contracttest.RunQuota) against the
// memory gate on a fake clock, so every RetryAfter is compared exactly.
func TestQuotaContract(t *testing.T) {
	contracttest.RunQuota(t, func(t *testing.T, limits map[string]gate.Limits) (gate.QuotaGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		q, err := memory.NewQuota(limits, memory.WithClock(clk))
		require.NoError(t, err)
		return q, clk
	})
}

func TestAdmitContract(t *testing.T) {
	contracttest.RunAdmit(t, func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		b, err := memory.NewBreaker(p, memory.WithClock(clk))
		require.NoError(t, err)
		q, err := memory.NewQuota(limits, memory.WithClock(clk))
		require.NoError(t, err)
		return b, q, clk
	})
}

func TestConcludeContract(t *testing.T) {
	contracttest.RunConclude(t, func(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (gate.ProviderGate, gate.QuotaGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		b, err := memory.NewBreaker(p, memory.WithClock(clk))
		require.NoError(t, err)
		q, err := memory.NewQuota(limits, memory.WithClock(clk))
		require.NoError(t, err)
		return b, q, clk
	})
}
