package redis_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// miniClock drives a miniredis server: its TIME follows SetTime, its keys
// expire only on FastForward, so Advance moves both. Slack is 0: miniredis
// time is exact.
type miniClock struct {
	mu  sync.Mutex
	m   *miniredis.Miniredis
	now time.Time
}

var _ contracttest.Clock = (*miniClock)(nil)

func newMiniClock(m *miniredis.Miniredis) *miniClock {
	c := &miniClock{m: m, now: testutil.Epoch}
	m.SetTime(c.now)
	return c
}

func (c *miniClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *miniClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.m.SetTime(c.now)
	c.m.FastForward(d)
}

func (c *miniClock) Slack() time.Duration { return 0 }

// newMini starts a miniredis with its clock and a client on it.
func newMini(t *testing.T) (*miniredis.Miniredis, *miniClock, goredis.UniversalClient) {
	t.Helper()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return m, newMiniClock(m), c
}

// miniGate is a Redis gate on its own miniredis.
func miniGate(t *testing.T, p gate.Policy) (*redis.Breaker, *miniClock, *miniredis.Miniredis) {
	t.Helper()
	m, clk, c := newMini(t)
	b, err := redis.NewBreaker(c, "chat", p)
	require.NoError(t, err)
	return b, clk, m
}

// realClient returns a client on addr closed at the end of t.
func realClient(t *testing.T, addr string) *goredis.Client { return goredisClient(t, addr) }

func goredisClient(tb testing.TB, addr string) *goredis.Client {
	tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

var scopeSeq atomic.Uint64

// uniqueScope keeps tests sharing one redis-server apart.
func uniqueScope() string {
	return "t" + time.Now().Format("150405") + "-" + string(rune('a'+scopeSeq.Add(1)%26)) + itoa(scopeSeq.Load())
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
