package pgw_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A gateway built from the environment runs its prober on the
// PGW_REDIS_PROBE_* and PGW_REDIS_HEARTBEAT_TTL_S keys: its heartbeat in
// Redis lives the configured TTL and is renewed once an interval, and a
// black hole is an outage once two probes, the first one interval after the
// last answer, ran out their timeout.
//
// Every key differs from its default, and each is checked on Redis's clock
// or by a bound that a machine falling behind can only exceed: the renewals
// are at least an interval apart (the default's 500 ms would not be), and
// the outage starts no sooner than an interval and two probe timeouts after
// the last renewal (the defaults' would, by 600 ms).
func TestRedisProberRunsOnTheProbeKeys(t *testing.T) {
	const (
		interval = 800 * time.Millisecond // PGW_REDIS_PROBE_INTERVAL_S
		timeout  = 400 * time.Millisecond // PGW_REDIS_PROBE_TIMEOUT_S
		ttl      = 2 * time.Second        // PGW_REDIS_HEARTBEAT_TTL_S
	)
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	up := testutil.NewUpstream(t)
	env := redisEnv(t, "redis://"+px.Addr()+"/0", up)
	env["PGW_REDIS_DOWN"] = "fail_closed" // an outage shows as ErrUnreachable at once
	env["PGW_REDIS_PROBE_INTERVAL_S"] = "0.8"
	env["PGW_REDIS_PROBE_TIMEOUT_S"] = "0.4"
	env["PGW_REDIS_PROBE_BACKOFF_S"] = "1.6"
	env["PGW_REDIS_HEARTBEAT_TTL_S"] = "2"
	logs := &outageLog{}
	gw, _ := newGateway(t, env, pgw.WithLogger(slog.New(logs)))
	_, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)

	// heartbeat reads, in one script on the server's clock, the expiry of
	// this process's heartbeat and the time left to it and to its key
	// (which the prober sets to twice the TTL at each renewal), in ms.
	key := env["PGW_REDIS_PREFIX"] + ":{pgw-fleet}:alive"
	heartbeat := func() (expiry, left, keyLeft int64) {
		out, err := srv.Do("EVAL", `
local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local t = redis.call('TIME')
if #r == 0 then return '-1 -1 -1' end
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return r[2] .. ' ' .. (tonumber(r[2]) - now) .. ' ' .. redis.call('PTTL', KEYS[1])`, "1", key)
		require.NoError(t, err)
		f := strings.Fields(out)
		require.Len(t, f, 3, out)
		n := make([]int64, 3)
		for i := range f {
			n[i], err = strconv.ParseInt(f[i], 10, 64)
			require.NoError(t, err, out)
		}
		return n[0], n[1], n[2]
	}

	// Three renewals: the TTL each writes, and the intervals between them.
	var renewals []int64 // server times of the renewals seen, in ms
	for deadline := time.Now().Add(20 * interval); len(renewals) < 3; {
		require.True(t, time.Now().Before(deadline), "renewals seen: %d", len(renewals))
		expiry, left, keyLeft := heartbeat()
		require.Positive(t, left, "one heartbeat alive")
		// expiry = renewal + TTL and the key's own expiry = renewal + 2·TTL,
		// so keyLeft − left is the TTL, whenever the sample is taken — up to
		// the server's own time between two reads of its clock in one
		// script (TIME, and the command's time for PEXPIRE and PTTL): the
		// default TTL is 1 s away.
		require.InDelta(t, ttl.Milliseconds(), keyLeft-left, 50, "the heartbeat lives PGW_REDIS_HEARTBEAT_TTL_S")
		if r := expiry - ttl.Milliseconds(); len(renewals) == 0 || r != renewals[len(renewals)-1] {
			renewals = append(renewals, r)
		}
		time.Sleep(10 * time.Millisecond) // sampling the server, not waiting for a goroutine
	}
	for i := 1; i < len(renewals); i++ {
		assert.GreaterOrEqual(t, renewals[i]-renewals[i-1], interval.Milliseconds()-1,
			"renewed once an interval, not more often: renewals at %v ms", renewals)
	}

	// The black hole starts between two probes: 100 to 400 ms after a
	// renewal, whose answer is then back, and before the next probe. A
	// probe that still reached Redis (a renewal after the one seen: the
	// machine fell behind) makes the run say nothing, and it starts over.
	for try := 1; ; try++ {
		require.LessOrEqual(t, try, 3, "no black hole started between two probes")
		var seen int64
		for deadline := time.Now().Add(20 * interval); ; {
			require.True(t, time.Now().Before(deadline), "no renewal 100 to 400 ms old")
			expiry, left, _ := heartbeat()
			if age := ttl.Milliseconds() - left; age >= 100 && age <= 400 {
				seen = expiry - ttl.Milliseconds()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		px.SetMode(testutil.ProxyBlackhole)
		// Until the outage starts a call waits for the black hole up to
		// its deadline; then it fails at once.
		for deadline := time.Now().Add(10 * time.Second); ; {
			require.True(t, time.Now().Before(deadline), "the outage was seen")
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
			cancel()
			if errors.Is(err, redis.ErrUnreachable) {
				break
			}
		}
		began, ok := logs.outageStart(try)
		require.True(t, ok, "the outage was logged")
		expiry, _, _ := heartbeat() // read past the black hole
		if last := expiry - ttl.Milliseconds(); last != seen {
			t.Logf("a probe reached Redis after the black hole began (renewals at %d and %d ms): again", seen, last)
			px.SetMode(testutil.ProxyForward)
			require.Eventually(t, func() bool {
				_, err := gw.Chat(context.Background(), hello())
				return err == nil
			}, 10*time.Second, 20*time.Millisecond, "back on Redis once a probe answers")
			continue
		}
		after := began.Sub(time.UnixMilli(seen))
		t.Logf("outage began %v after the last renewal (interval %v, probe timeout %v)", after.Round(time.Millisecond), interval, timeout)
		assert.GreaterOrEqual(t, after, interval+2*timeout-2*time.Millisecond,
			"the next probe an interval after the last answer, then two probe timeouts")
		break
	}

	px.SetMode(testutil.ProxyForward)
	assert.Eventually(t, func() bool {
		_, err := gw.Chat(context.Background(), hello())
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "back on Redis once a probe answers")
}

// outageLog is a slog handler that keeps the times of the "redis outage"
// lines.
type outageLog struct {
	mu    sync.Mutex
	began []time.Time
}

func (l *outageLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *outageLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.HasPrefix(r.Message, "pgw: redis outage") {
		l.began = append(l.began, r.Time)
	}
	return nil
}

func (l *outageLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *outageLog) WithGroup(string) slog.Handler      { return l }

// outageStart returns the time the n-th outage (from 1) was logged.
func (l *outageLog) outageStart(n int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.began) < n {
		return time.Time{}, false
	}
	return l.began[n-1], true
}
