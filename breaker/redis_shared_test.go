package breaker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

var errDown = errors.New("payments down")

// process is one process's breaker named "payments" on a Redis gate of its
// own client, as two replicas of a service would build it.
type process struct {
	cb *breaker.Breaker
	mu sync.Mutex
	ev []breaker.StateChange
}

func (p *process) events() []breaker.StateChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]breaker.StateChange(nil), p.ev...)
}

func newProcess(t *testing.T, addr string, p gate.Policy, cfg breaker.Config) *process {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	g, err := redis.NewBreaker(c, "svc", p)
	require.NoError(t, err)
	pr := &process{}
	cfg.Gate = g
	cfg.OnStateChange = append(cfg.OnStateChange, func(ev breaker.StateChange) {
		pr.mu.Lock()
		pr.ev = append(pr.ev, ev)
		pr.mu.Unlock()
	})
	pr.cb, err = breaker.New("payments", cfg)
	require.NoError(t, err)
	return pr
}

func fail(ctx context.Context, cb *breaker.Breaker) error {
	return cb.Execute(ctx, func(context.Context) error { return errDown })
}

func ok(ctx context.Context, cb *breaker.Breaker) error {
	return cb.Execute(ctx, func(context.Context) error { return nil })
}

// Two processes share one breaker through a Redis gate: a trip by one is
// the other's Open (rejections with the cooldown as RetryAfter, and a
// StateChange it observed), and the forces of one (HalfOpen, Open, Close)
// steer both.
func TestTwoProcessesShareOneBreakerThroughRedis(t *testing.T) {
	srv := testutil.StartRedis(t)
	ctx := t.Context()
	policy := gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Minute, CooldownMultiplier: 1}
	a := newProcess(t, srv.Addr, policy, breaker.Config{})
	b := newProcess(t, srv.Addr, policy, breaker.Config{})

	require.ErrorIs(t, fail(ctx, a.cb), errDown)
	require.ErrorIs(t, fail(ctx, a.cb), errDown)
	assert.Equal(t, gate.Open, a.cb.State())
	assert.Equal(t, gate.Open, b.cb.State(), "the trip of A is B's state")
	err := ok(ctx, b.cb)
	var oe *breaker.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, gate.Open, oe.State)
	assert.InDelta(t, time.Minute.Seconds(), oe.RetryAfter.Seconds(), 2)
	if evs := b.events(); assert.NotEmpty(t, evs, "B hears of the trip it observed") {
		assert.Equal(t, gate.Open, evs[len(evs)-1].To)
	}

	// A starts a probe phase; B's call is the probe, and its success
	// closes the breaker for both.
	require.NoError(t, a.cb.HalfOpen())
	assert.Equal(t, gate.HalfOpen, b.cb.State())
	require.NoError(t, ok(ctx, b.cb))
	assert.Equal(t, gate.Closed, a.cb.State())
	assert.Equal(t, gate.Closed, b.cb.State())

	// A holds it open: B is rejected with no certain end; A's Close lifts
	// the hold for B too.
	require.NoError(t, a.cb.Open())
	require.ErrorAs(t, ok(ctx, b.cb), &oe)
	assert.Equal(t, time.Duration(0), oe.RetryAfter, "a hold has no certain end")
	require.NoError(t, a.cb.Close())
	require.NoError(t, ok(ctx, b.cb))
	assert.Equal(t, gate.Closed, b.cb.State())
}

// ReadyToTrip runs on each process's own counts, and its trip reaches the
// shared gate: the other process is rejected at once.
func TestReadyToTripOfOneProcessOpensTheSharedBreaker(t *testing.T) {
	srv := testutil.StartRedis(t)
	ctx := t.Context()
	policy := gate.Policy{ConsecutiveFailures: gate.Disabled, Cooldown: time.Minute, CooldownMultiplier: 1}
	a := newProcess(t, srv.Addr, policy, breaker.Config{
		ReadyToTrip: func(c breaker.Counts) bool { return c.Requests >= 4 && c.FailureRate() >= 0.5 },
	})
	b := newProcess(t, srv.Addr, policy, breaker.Config{})
	require.NoError(t, ok(ctx, a.cb))
	require.NoError(t, ok(ctx, a.cb))
	require.ErrorIs(t, fail(ctx, a.cb), errDown)
	assert.Equal(t, gate.Closed, b.cb.State())
	require.ErrorIs(t, fail(ctx, a.cb), errDown) // 2 of 4 failed
	assert.Equal(t, gate.Open, a.cb.State())
	var oe *breaker.OpenError
	require.ErrorAs(t, ok(ctx, b.cb), &oe)
	assert.InDelta(t, time.Minute.Seconds(), oe.RetryAfter.Seconds(), 2)
	assert.Equal(t, breaker.Counts{}, a.cb.Counts(), "A's counts start again at the trip")
	m := a.cb.Metrics()
	assert.Equal(t, uint64(2), m.Successes)
	assert.Equal(t, uint64(2), m.Failures)
}
