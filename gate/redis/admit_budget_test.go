package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// budgetTrio is a breaker, a quota and an advertised budget of one scope on
// one miniredis.
func budgetTrio(t *testing.T, p gate.Policy, limits map[string]gate.Limits) (*redis.Breaker, *redis.Quota, *redis.Budget, *miniClock) {
	t.Helper()
	_, clk, c := newMini(t)
	b, err := redis.NewBreaker(c, "chat", p)
	require.NoError(t, err)
	q, err := redis.NewQuota(c, "chat", limits)
	require.NoError(t, err)
	bg, err := redis.NewBudget(c, "chat")
	require.NoError(t, err)
	return b, q, bg, clk
}

// AdmitBudget admits as Admit then Take would: the breaker admits, the
// quota reserves, and the request comes off the advertised budget.
func TestAdmitBudgetTakesTheBudgetWithTheAdmission(t *testing.T) {
	b, q, bg, _ := budgetTrio(t, gate.Policy{}, map[string]gate.Limits{"s": {RPM: 60, MaxInFlight: 2}})
	ctx := t.Context()
	spent := gate.AdvertisedWindow{Limit: 10, Remaining: 1, Reset: time.Minute}
	require.NoError(t, bg.Refresh(ctx, "s", gate.Advertised{Requests: spent, Tokens: gate.UnknownWindow}))

	d, p, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 5)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, d.Allowed)
	assert.True(t, qd.Allowed)
	assert.NotEmpty(t, p.ID, "an in-flight lease")
	a, known, err := bg.Read(ctx, "s")
	require.NoError(t, err)
	require.True(t, known)
	assert.Equal(t, int64(0), a.Requests.Remaining, "the take used the last request")
}

// A spent budget rejects as Take does (the advertised limit, RetryAfter the
// reset) and the admission holds nothing: the probe lease is freed, no
// in-flight slot or request was reserved.
func TestAdmitBudgetRejectionGivesEverythingBack(t *testing.T) {
	p := gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Second}
	b, q, bg, clk := budgetTrio(t, p, map[string]gate.Limits{"s": {RPM: 1, MaxInFlight: 1}})
	ctx := t.Context()
	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = b.Record(ctx, "s", d, gate.Failure) // Open
	require.NoError(t, err)
	clk.Advance(time.Second) // the next admission is the probe
	spent := gate.AdvertisedWindow{Limit: 10, Remaining: 0, Reset: 30 * time.Second}
	require.NoError(t, bg.Refresh(ctx, "s", gate.Advertised{Requests: spent, Tokens: gate.UnknownWindow}))

	d, _, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, d.Probe, "the breaker granted the probe")
	assert.False(t, qd.Allowed)
	assert.Equal(t, gate.LimitAdvertisedRequests, qd.Limit)
	assert.Equal(t, 30*time.Second, qd.RetryAfter)

	snap, err := b.Snapshot(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, 0, snap.ProbesInFlight, "the probe lease was given back")
	_, qd, err = q.Acquire(ctx, "s", 0)
	require.NoError(t, err)
	assert.True(t, qd.Allowed, "the one request per minute and the one slot are still free")
}

// AdmitBudget combines only with its own kind on the same prefix: anything
// else is ok false with nothing done.
func TestAdmitBudgetStepsAsideForOtherGates(t *testing.T) {
	b, q, _, _ := budgetTrio(t, gate.Policy{}, map[string]gate.Limits{"s": {RPM: 60}})
	_, _, c := newMini(t)
	other, err := redis.NewBudget(c, "chat", redis.WithPrefix("elsewhere"))
	require.NoError(t, err)
	_, _, _, ok, err := q.AdmitBudget(t.Context(), b, other, "s", 0)
	require.NoError(t, err)
	assert.False(t, ok)
}
