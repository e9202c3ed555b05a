package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// growthCase pins that a failed probe grows the cooldown to exactly
// cooldown × multiplier (in whole µs) when that product is a whole number of
// µs: float noise in the product must not cost (or add) a microsecond, and
// every backend must agree.
func growthCase(name string, cooldown time.Duration, multiplier float64, want time.Duration) breakerCase {
	return breakerCase{name: name, policy: func(p *gate.Policy) {
		p.Cooldown = cooldown
		p.CooldownMultiplier = multiplier
		p.MaxCooldown = 2 * time.Second
	}, run: func(h *breakerHarness) {
		d := h.toHalfOpen()
		u := h.record(d, gate.Failure)
		require.Equal(h.t, gate.Open, u.State)
		h.opened(want, u.RetryAfter, "RetryAfter after a failed probe = cooldown × multiplier")
		assert.Equal(h.t, want, h.snap().Cooldown, "grown cooldown")
	}}
}

// auditCases pin points of the state machine the other groups leave open.
func auditCases() []breakerCase {
	return []breakerCase{
		// 230ms × 2.3 is 528.9999…ms in float nanoseconds, 330ms × 2.3 is
		// 758.9999…ms in float microseconds: exact products either way.
		growthCase("CooldownGrowthIsTheExactProductNs", 230*time.Millisecond, 2.3, 529*time.Millisecond),
		growthCase("CooldownGrowthIsTheExactProductUs", 330*time.Millisecond, 2.3, 759*time.Millisecond),
	}
}
