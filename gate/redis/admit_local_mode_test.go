package redis_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

// A breaker failover that fails closed admits nothing during an outage, also
// when the quota beside it fails open and could combine the three local
// fallbacks: the combined admission of the outage path obeys the breaker's
// mode, as TryEnter does, instead of asking the breaker's fallback.
func TestOutageAdmitBudgetObeysAFailClosedBreaker(t *testing.T) {
	limits := map[string]gate.Limits{"s": {RPM: 10}}
	r := newOutageRig(t, "mode", limits)
	mq, err := memory.NewQuota(limits)
	require.NoError(t, err)
	b, q, bg := r.blackholed(t, redis.FailClosed, mq)
	ctx := t.Context()

	d, _, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 1)
	if ok {
		assert.False(t, err == nil && d.Allowed && qd.Allowed, "a fail-closed breaker admitted a call during the outage")
	}
	_, err = b.TryEnter(ctx, "s")
	require.Error(t, err, "TryEnter of the fail-closed breaker refuses during the outage")
}
