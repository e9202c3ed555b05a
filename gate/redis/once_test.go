package redis_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// resendHook notes every script command that go-redis would be free to send
// again after its reply was lost (the cluster client resends on a reset or a
// timeout whatever MaxRetries says, unless the command says NoRetry).
type resendHook struct {
	mu      sync.Mutex
	scripts int
	free    []string
}

func (h *resendHook) note(cmd goredis.Cmder) {
	name := strings.ToLower(cmd.Name())
	if name != "evalsha" && name != "eval" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.scripts++
	if !cmd.NoRetry() {
		h.free = append(h.free, cmd.String())
	}
}

func (h *resendHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *resendHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *resendHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			h.note(c)
		}
		return next(ctx, cmds)
	}
}

// Every script that changes a gate's state is sent at most once: a lost
// reply is not followed by a second run that would take a second lease or
// count a failure twice.
func TestGateScriptsAreNeverResentByTheClient(t *testing.T) {
	_, _, uc := newMini(t)
	h := &resendHook{}
	uc.AddHook(h)
	ctx := t.Context()
	b, err := redis.NewBreaker(uc, "chat", gate.Policy{})
	require.NoError(t, err)
	q, err := redis.NewQuota(uc, "chat", map[string]gate.Limits{"s": {RPM: 600, TPM: 100000, MaxInFlight: 4}})
	require.NoError(t, err)

	d, err := b.TryEnter(ctx, "s")
	require.NoError(t, err)
	_, err = b.Record(ctx, "s", d, gate.Success)
	require.NoError(t, err)
	p, qd, err := q.Acquire(ctx, "s", 10)
	require.NoError(t, err)
	require.True(t, qd.Allowed)
	require.NoError(t, q.Settle(ctx, p, 12))
	require.NoError(t, q.Release(ctx, p))

	d, p, qd, ok, err := q.Admit(ctx, b, "s", 10)
	require.NoError(t, err)
	require.True(t, ok && d.Allowed && qd.Allowed)
	d2, p2, qd2, ok, err := q.Admit(ctx, b, "s", 10)
	require.NoError(t, err)
	require.True(t, ok && d2.Allowed && qd2.Allowed)
	// One conclusion alone, then two in one pipeline.
	cs := []gate.Conclusion{{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: 8}}
	require.True(t, q.Conclude(ctx, b, cs))
	require.NoError(t, cs[0].Err)
	d3, p3, _, _, err := q.Admit(ctx, b, "s", 10)
	require.NoError(t, err)
	cs = []gate.Conclusion{
		{Source: "s", Decision: d2, Outcome: gate.Failure, Permit: p2, HasPermit: true, Tokens: -1},
		{Source: "s", Decision: d3, Outcome: gate.Released, Permit: p3, HasPermit: true, Tokens: -1},
	}
	require.True(t, q.Conclude(ctx, b, cs))

	require.Positive(t, h.scripts)
	assert.Empty(t, h.free, "scripts go-redis may send twice")
}
