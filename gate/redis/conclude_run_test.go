package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// scriptsSent is how many script commands h saw, and forgets them.
func (h *resendHook) scriptsSent() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.scripts
	h.scripts, h.free = 0, nil
	return n
}

// runRig is a breaker and a quota on a real redis-server, with the script
// commands counted, and admit: n admissions of source s.
func runRig(t *testing.T) (*goredis.Client, *resendHook, *redis.Breaker, *redis.Quota, func(n int, o ...gate.Outcome) []gate.Conclusion) {
	t.Helper()
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	counter := &resendHook{}
	c.AddHook(counter)
	b, err := redis.NewBreaker(c, "chat", gate.Policy{ConsecutiveFailures: 3})
	require.NoError(t, err)
	q, err := redis.NewQuota(c, "chat", map[string]gate.Limits{"s": {RPM: 1000, TPM: 100000, MaxInFlight: 10}})
	require.NoError(t, err)
	require.NoError(t, q.Preload(context.Background())) // no NOSCRIPT to count
	admit := func(n int, outcomes ...gate.Outcome) []gate.Conclusion {
		var cs []gate.Conclusion
		for i := range n {
			d, p, qd, ok, err := q.Admit(context.Background(), b, "s", 10)
			require.NoError(t, err)
			require.True(t, ok && d.Allowed && qd.Allowed)
			o := gate.Success
			if i < len(outcomes) {
				o = outcomes[i]
			}
			cs = append(cs, gate.Conclusion{Source: "s", Decision: d, Outcome: o, Permit: p, HasPermit: true, Tokens: 12})
		}
		return cs
	}
	return c, counter, b, q, admit
}

func inFlight(t *testing.T, c *goredis.Client, q *redis.Quota) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), q.Keys("s")[1]).Result()
	require.NoError(t, err)
	return n
}

// Successes and Releaseds of one source that queued up together cost Redis
// one command, not one each; every permit is given back.
func TestConcludeSendsARunAsOneCommand(t *testing.T) {
	c, counter, b, q, admit := runRig(t)
	cs := admit(5, gate.Success, gate.Released, gate.Success, gate.Released, gate.Success)
	require.EqualValues(t, 5, inFlight(t, c, q))
	counter.scriptsSent()
	require.True(t, q.Conclude(context.Background(), b, cs))
	for _, k := range cs {
		require.NoError(t, k.Err)
		require.True(t, k.Update.Applied)
		require.Equal(t, gate.Closed, k.Update.State)
	}
	require.Equal(t, 1, counter.scriptsSent(), "one script for the run")
	require.Zero(t, inFlight(t, c, q), "every lease freed")
}

// A Failure ends a run: it goes on its own, in its place, and the Success
// after it, which resets the failure count, starts the next run.
func TestConcludeRunEndsAtAFailure(t *testing.T) {
	c, counter, b, q, admit := runRig(t)
	cs := admit(5, gate.Success, gate.Success, gate.Failure, gate.Success, gate.Success)
	counter.scriptsSent()
	require.True(t, q.Conclude(context.Background(), b, cs))
	for _, k := range cs {
		require.NoError(t, k.Err)
	}
	require.Equal(t, 3, counter.scriptsSent(), "run, Failure, run")
	s, err := b.Snapshot(context.Background(), "s")
	require.NoError(t, err)
	require.Zero(t, s.ConsecutiveFailures, "the Success after the Failure reset it")
	require.Zero(t, inFlight(t, c, q))
}

// A run whose script the server lost is sent again with its own source: a
// batch of one run is a single command, which falls back to EVAL alone.
func TestConcludeRunAfterScriptFlush(t *testing.T) {
	c, _, b, q, admit := runRig(t)
	cs := admit(3)
	require.NoError(t, c.ScriptFlush(context.Background()).Err())
	require.True(t, q.Conclude(context.Background(), b, cs))
	for _, k := range cs {
		require.NoError(t, k.Err)
		require.True(t, k.Update.Applied)
	}
	require.Zero(t, inFlight(t, c, q))
}

// A batch whose calls use different scripts must still apply one source's
// outcomes in their order when the server has lost only some of its
// scripts (SCRIPT FLUSH, a restart, then a lone conclusion that loaded its
// own): a Failure may not be applied before the Success that comes before
// it in the batch and resets the count. ConsecutiveFailures is 3: in order,
// F, S, R, F, F leave 2 failures and the breaker Closed; the three Failures
// first would open it.
func TestConcludeKeepsASourcesOrderWhenTheServerLostSomeScripts(t *testing.T) {
	c, _, b, q, admit := runRig(t)
	require.NoError(t, c.ScriptFlush(context.Background()).Err())
	lone := admit(1, gate.Success)
	require.True(t, q.Conclude(context.Background(), b, lone)) // loads a lone conclusion's script
	require.NoError(t, lone[0].Err)
	cs := admit(5, gate.Failure, gate.Success, gate.Released, gate.Failure, gate.Failure)
	require.True(t, q.Conclude(context.Background(), b, cs))
	for _, k := range cs {
		require.NoError(t, k.Err)
		require.True(t, k.Update.Applied, "%+v", k.Update)
		require.Equal(t, gate.Closed, k.Update.State)
	}
	s, err := b.Snapshot(context.Background(), "s")
	require.NoError(t, err)
	require.Equal(t, gate.Closed, s.State)
	require.Equal(t, 2, s.ConsecutiveFailures)
	require.Zero(t, inFlight(t, c, q))
}
