package redis

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The conclusion script starts with its common case decided on its own
// (lua/conclude_fast.lua). These tests hold it to the rest of the script,
// as admit_fast_test.go does for the admission's.

// concludeFastBlock is lua/conclude_fast.lua as the conclusion script
// starts.
var concludeFastBlock = mustRead("lua/conclude_fast.lua")

var (
	// concludeWithoutFast is the conclusion script without its first block.
	concludeWithoutFast = newLua(strings.TrimPrefix(scriptConcludeSrc, concludeFastBlock))
	// concludeMarked is the conclusion script whose first block, when it
	// decides, says so: its reply ends with 42.
	concludeMarked = newLua(strings.Replace(concludeFastBlock, "      return reply\n", "      reply[#reply + 1] = 42\n      return reply\n", 1) +
		strings.TrimPrefix(scriptConcludeSrc, concludeFastBlock))
)

func TestConcludeFastBlockIsTheScriptsStart(t *testing.T) {
	require.True(t, strings.HasPrefix(scriptConcludeSrc, concludeFastBlock))
	require.NotEqual(t, concludeFastBlock+strings.TrimPrefix(scriptConcludeSrc, concludeFastBlock), concludeMarked.src, "the marked variant marks the block's return")
}

// conclusionArgs draws one to five outcomes of admissions of a source in
// state c, leaning to the common run (Successes and Releaseds of the
// current generation's admissions, with corrections and leases to give
// back), and renders them as conclude.lua's arguments after head and the
// TPM rate's.
func conclusionArgs(r *rand.Rand, c admitCase, head, tpm []any, sc *script) []any {
	args := append(append([]any{}, head...), tpm...)
	args[1] = sc.Hash()
	gen := "0"
	if c.record != nil && c.record["gen"] != "" {
		gen = c.record["gen"]
	}
	common := r.IntN(2) == 0
	pick := func(xs ...string) string {
		if common && r.IntN(32) > 0 {
			return xs[len(xs)-1]
		}
		return xs[r.IntN(len(xs))]
	}
	var ids []string
	for id := range c.leases {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the same draws pick the same leases
	for i := range 1 + r.IntN(5) {
		delta, id := "", ""
		if c.limits.TPM > 0 {
			delta = pick("", "-100000000", "100000000", "250", "-3")
		}
		if c.limits.MaxInFlight > 0 {
			id = "gone-" + strconv.Itoa(i)
			if len(ids) > 0 && r.IntN(3) > 0 {
				id = ids[r.IntN(len(ids))]
			}
		}
		args = append(args, pick("2", "3", "4", "1"), pick("0", "1"), pick("1", "0"), pick("77", gen), delta, id)
	}
	return args
}

func TestConcludeFastBlockWritesWhatTheWholeScriptWrites(t *testing.T) {
	cl := miniAtEpoch(t)
	ctx := context.Background()
	now := testutil.Epoch.UnixMicro()
	windowless, err := NewBreaker(cl, "fastc", gate.Policy{})
	require.NoError(t, err)
	windowed, err := NewBreaker(cl, "fastc", gate.Policy{Window: 10 * time.Second, WindowFailureRate: 0.5})
	require.NoError(t, err)
	ttlMS, err := strconv.ParseInt(windowless.policy[0].(string), 10, 64)
	require.NoError(t, err)

	r := rand.New(rand.NewPCG(3, 4))
	var decided, left int
	for i := range 2000 {
		c := randomAdmitCase(r, now, ttlMS)
		if i < 20 {
			// A record that holds only a failure count is not fresh: no
			// TTL is known for it (fast.lua).
			c.record = map[string]string{"cf": "0"}
		}
		rb := windowless
		if r.IntN(6) == 0 {
			rb = windowed
		}
		q, names := threeInState(t, ctx, cl, "fastc", i, c)
		seed := r.Uint64()
		run := func(source string, sc *script) ([]any, error) {
			head, tpm := newConcludeHead(rb, q.admitKeys(source)[:4]), noLimits[:3]
			if s := q.sources[source]; s != nil {
				head, tpm = s.concludeHead(rb), s.tpm
			}
			// The same outcomes for each source: the same draws.
			args := conclusionArgs(rand.New(rand.NewPCG(seed, 5)), c, head, tpm, sc)
			return runArgs(ctx, cl, sc.src, args).Slice()
		}
		want, wantErr := run(names[0], concludeWithoutFast)
		got, gotErr := run(names[1], scriptConclude)
		marked, markedErr := run(names[2], concludeMarked)
		require.Equal(t, wantErr, gotErr, "case %d: %s", i, c)
		require.Equal(t, wantErr, markedErr, "case %d: %s", i, c)
		require.Equal(t, want, got, "case %d: %s", i, c)
		requireSameKeys(t, ctx, cl, q, names, "case %d: %s", i, c)
		if len(marked) == len(want)+1 && marked[len(want)] == int64(42) {
			decided++
			marked = marked[:len(want)]
		} else {
			left++
		}
		require.Equal(t, want, marked, "case %d: %s", i, c)
	}
	t.Logf("the block decided %d cases and left %d", decided, left)
	require.Greater(t, decided, 200)
	require.Greater(t, left, 200)
}

// TestConcludeFastBlockConcludesTheCommonRun runs admissions and their
// conclusions through the gates on a real redis-server: a run of
// Successes with TPM corrections and leases is the block's; a Failure is
// left to the rest of the script, which counts it.
func TestConcludeFastBlockConcludesTheCommonRun(t *testing.T) {
	cl, prefix := realRedisRig(t, "fastcreal")
	ctx := context.Background()
	rb, err := NewBreaker(cl, prefix, gate.Policy{ConsecutiveFailures: 3})
	require.NoError(t, err)
	q, err := NewQuota(cl, prefix, map[string]gate.Limits{"s": {RPM: 1000, TPM: 1_000_000, MaxInFlight: 10}})
	require.NoError(t, err)

	var cs []gate.Conclusion
	for range 4 {
		d, p, qd, ok, err := q.Admit(ctx, rb, "s", 100)
		require.NoError(t, err)
		require.True(t, ok && d.Allowed && qd.Allowed)
		cs = append(cs, gate.Conclusion{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: 40})
	}
	conclude := func(sc *script, cs []gate.Conclusion) []any {
		t.Helper()
		k := conclusionCall{i: 0}
		for i := 1; i < len(cs); i++ {
			k.more = append(k.more, i)
		}
		args := q.runArgs(rb, cs, &k)
		args[1] = sc.Hash()
		v, err := runArgs(ctx, cl, sc.src, args).Slice()
		require.NoError(t, err)
		return v
	}
	v := conclude(concludeMarked, cs[:3])
	require.Len(t, v, 16, "three outcomes' five integers, and the mark")
	require.Equal(t, int64(42), v[15], "a run of Successes is the block's")
	n, err := cl.ZCard(ctx, q.admitKeys("s")[3]).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the run gave back its three leases")
	tl, err := cl.HGet(ctx, q.admitKeys("s")[2], "tl").Int64()
	require.NoError(t, err)
	tpmUnit := int64(60) // TPM 1,000,000: 60e6 / gcd(1e6, 60e6)
	// 4 × 100 tokens reserved, 3 × 60 refunded; the level has drained a
	// little since, by at most what a second drains.
	require.InDelta(t, float64((400-180)*tpmUnit), float64(tl), float64(1_000_000*tpmUnit/60))

	cs[3].Outcome = gate.Failure
	v = conclude(concludeMarked, cs[3:])
	require.Len(t, v, 5, "a Failure is the rest of the script's: no mark")
	require.Equal(t, int64(1), v[0], "applied")
}
