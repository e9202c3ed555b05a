package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The admission script starts with its common case decided on its own
// (lua/admit_fast.lua). These tests hold it to the rest of the script: in
// every state, the whole script answers and writes exactly what the script
// without that block does.

// admitFastBlock is lua/admit_fast.lua as the admission script starts.
var admitFastBlock = mustRead("lua/admit_fast.lua")

// fastReturn is the reply admit_fast.lua gives when it decides.
const fastReturn = "return { 1, 0, 0, 0, g, g, f, 1, 0, 0 }"

var (
	// admitWithoutFast is the admission script without its first block:
	// what every admission ran before that block existed.
	admitWithoutFast = newLua(strings.TrimPrefix(scriptAdmitSrc, admitFastBlock))
	// admitMarked is the admission script whose first block, when it
	// decides, says so: its reply's last integer is 42 instead of 0.
	admitMarked = newLua(strings.ReplaceAll(admitFastBlock, fastReturn, "return { 1, 0, 0, 0, g, g, f, 1, 0, 42 }") +
		strings.TrimPrefix(scriptAdmitSrc, admitFastBlock))
)

func TestAdmitFastBlockIsTheScriptsStart(t *testing.T) {
	require.True(t, strings.HasPrefix(scriptAdmitSrc, admitFastBlock))
	require.Equal(t, 1, strings.Count(admitFastBlock, fastReturn), "the marked variant must mark every return of the block")
}

// admitCase is one state of a source's keys and one admission into it.
type admitCase struct {
	limits gate.Limits
	record map[string]string  // the breaker record's fields (nil: no record)
	bucket map[string]string  // the bucket hash's fields (nil: none)
	leases map[string]float64 // in-flight leases: ID → expiry µs
	// withBudget: the admission takes the advertised budget too (a fifth
	// key), whose hash holds budget (nil: none).
	withBudget bool
	budget     map[string]string
	ttls       map[string]time.Duration
	est        int64
}

func (c admitCase) String() string {
	return fmt.Sprintf("limits %+v record %v bucket %v leases %d budget %v %v est %d ttls %v", c.limits, c.record, c.bucket, len(c.leases), c.withBudget, c.budget, c.est, c.ttls)
}

// randomAdmitCase draws a state around now (µs) for a source under
// limits drawn too: records fresh, stale, Open, forced; buckets empty,
// partly full, full, with a changed unit, with expiries that need a
// refresh or not; lease sets empty, partly taken, at the limit with and
// without expired leases.
func randomAdmitCase(r *rand.Rand, now int64, ttlMS int64) admitCase {
	// Half the cases lean to the common one: each pick then takes its
	// last choice (a Closed, fresh record; room; stored units; expiries
	// that need no refresh) seven times in eight.
	common := r.IntN(2) == 0
	pick := func(xs ...string) string {
		if common && r.IntN(8) > 0 {
			return xs[len(xs)-1]
		}
		return xs[r.IntN(len(xs))]
	}
	var c admitCase
	c.limits = gate.Limits{
		RPM:         []int{0, 60, 1000}[r.IntN(3)],
		TPM:         []int{0, 1000, 100_000}[r.IntN(3)],
		MaxInFlight: []int{0, 1, 3}[r.IntN(3)],
	}
	c.est = []int64{0, 7, 400}[r.IntN(3)]
	if c.limits.TPM > 0 && c.est > int64(c.limits.TPM) {
		c.est = int64(c.limits.TPM)
	}
	c.ttls = map[string]time.Duration{}
	us := func(d int64) string { return strconv.FormatInt(now+d, 10) }
	if common || r.IntN(5) > 0 {
		c.record = map[string]string{}
		set := func(k, v string) {
			if v != "" {
				c.record[k] = v
			}
		}
		set("st", pick("", "1", "2", "0"))
		set("gen", pick("", "5", "1767322000000000"))
		set("seq", pick("", "1767322000000001"))
		set("fo", pick("", "1", "2", "0"))
		set("x", pick("", us(ttlMS*1000/4), us(ttlMS*1000*3/4), us(ttlMS*1000)))
		set("cf", pick("", "2", "0"))
		set("cd", pick("", "5000000"))
		set("ou", pick("", us(-1), us(5_000_000)))
		if r.IntN(2) == 0 {
			c.ttls["cb"] = time.Duration(ttlMS) * time.Millisecond
		}
	}
	if common || r.IntN(5) > 0 {
		c.bucket = map[string]string{}
		set := func(k, v string) {
			if v != "" {
				c.bucket[k] = v
			}
		}
		for _, b := range []struct {
			p string
			n int
		}{{"r", c.limits.RPM}, {"t", c.limits.TPM}} {
			if b.n == 0 && (common || r.IntN(2) == 0) {
				continue
			}
			n := b.n
			if n == 0 { // a limit the source no longer has
				n = 100
			}
			g := gcd(int64(n), 60e6)
			unit := 60e6 / g
			capacity := int64(n) * unit
			// Levels at the edges: the call's cost fills the bucket exactly
			// (one request, or 7 tokens), or overfills it by a little.
			exact := capacity - unit
			if b.p == "t" {
				exact = capacity - 7*unit
			}
			set(b.p+"l", pick("", "0", strconv.FormatInt(exact, 10), strconv.FormatInt(exact+1, 10), strconv.FormatInt(capacity-unit/2, 10),
				strconv.FormatInt(capacity, 10), strconv.FormatInt(2*capacity, 10), strconv.FormatInt(capacity/3, 10)))
			set(b.p+"s", pick("", us(-1), us(0), us(1000), us(-2_000_000)))
			set(b.p+"u", pick("", strconv.FormatInt(unit*2, 10), strconv.FormatInt(unit, 10)))
		}
		// Expiries just above and below what a third of a bucket, or a
		// full one, needs (its drain time plus a second).
		set("qx", pick("", us(500_000), us(20_500_000), us(21_500_000), us(60_500_000), us(61_500_000), us(30*60_000_000)))
		set("ix", pick("", us(500_000), us(10*60_000_000), us(30*60_000_000)))
		if len(c.bucket) == 0 {
			c.bucket = nil
		} else if r.IntN(2) == 0 {
			c.ttls["quota"] = 10 * time.Minute
		}
	}
	if r.IntN(2) == 0 {
		c.withBudget = true
		if common || r.IntN(4) > 0 {
			// Windows unknown, known with room or without, reset passed
			// or to come, lengths seen or not, admissions made blind.
			c.budget = map[string]string{}
			set := func(k, v string) {
				if v != "" {
					c.budget[k] = v
				}
			}
			for _, w := range []string{"r", "t"} {
				set(w+"l", pick("", "-1", "5", "1000"))
				set(w+"r", pick("", "-1", "0", "3", "900"))
				set(w+"e", pick("", "0", us(-1), us(0), us(20_000_000)))
				set(w+"p", pick("", us(-60_000_000)))
				set(w+"s", pick("", "0", "60000000"))
			}
			set("n", pick("", "2", "0"))
			if len(c.budget) == 0 {
				c.budget = nil
			} else if r.IntN(2) == 0 {
				c.ttls["advertised"] = time.Minute
			}
		}
	}
	if c.limits.MaxInFlight > 0 || r.IntN(4) == 0 {
		c.leases = map[string]float64{}
		n := r.IntN(c.limits.MaxInFlight + 2)
		if common && c.limits.MaxInFlight > 1 {
			n = 1 + r.IntN(c.limits.MaxInFlight-1)
		}
		for i := range n {
			exp := now + 30_000_000
			if !common && r.IntN(4) == 0 {
				exp = now - 1
			}
			c.leases["lease-"+strconv.Itoa(i)] = float64(exp)
		}
		if len(c.leases) == 0 {
			c.leases = nil
		} else if r.IntN(2) == 0 {
			c.ttls["inflight"] = 10 * time.Minute
		}
	}
	return c
}

// edgeAdmitCases are the common case at its edges: a bucket that the
// call's cost fills exactly, or overfills by one scaled unit, for each
// limit.
func edgeAdmitCases(now int64, ttlMS int64) []admitCase {
	us := func(d int64) string { return strconv.FormatInt(now+d, 10) }
	// RPM 60: unit 1e6, capacity 60e6; TPM 1000: unit 60e3, capacity 60e6.
	base := func(rl, tl int64) admitCase {
		return admitCase{
			limits: gate.Limits{RPM: 60, TPM: 1000, MaxInFlight: 3},
			record: map[string]string{"st": "0", "gen": "5", "fo": "0", "x": us(ttlMS * 1000)},
			bucket: map[string]string{
				"rl": strconv.FormatInt(rl, 10), "rs": us(0), "ru": "1000000",
				"tl": strconv.FormatInt(tl, 10), "ts": us(0), "tu": "60000",
				"qx": us(30 * 60_000_000), "ix": us(30 * 60_000_000),
			},
			leases: map[string]float64{"held": float64(now + 30_000_000)},
			ttls:   map[string]time.Duration{},
			est:    7,
		}
	}
	const capacity = 60_000_000
	// With the advertised budget: its key's TTL set by the tokens window,
	// whose length is not known yet.
	budget := base(0, 0)
	budget.withBudget = true
	budget.budget = map[string]string{
		"rl": "1000", "rr": "900", "re": us(5_000_000), "rs": "0",
		"tl": "1000", "tr": "900", "te": us(20_000_000), "ts": "0", "n": "0",
	}
	return []admitCase{
		base(0, 0),
		base(capacity-1_000_000, 0),
		base(capacity-1_000_000+1, 0),
		base(0, capacity-7*60_000),
		base(0, capacity-7*60_000+1),
		budget,
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// seedAdmitCase writes c's state under source's keys.
func seedAdmitCase(t *testing.T, ctx context.Context, cl goredis.UniversalClient, keys []string, c admitCase) {
	t.Helper()
	if c.record != nil {
		require.NoError(t, cl.HSet(ctx, keys[0], c.record).Err())
	}
	if c.bucket != nil {
		require.NoError(t, cl.HSet(ctx, keys[2], c.bucket).Err())
	}
	for id, exp := range c.leases {
		require.NoError(t, cl.ZAdd(ctx, keys[3], goredis.Z{Score: exp, Member: id}).Err())
	}
	if c.budget != nil {
		require.NoError(t, cl.HSet(ctx, keys[4], c.budget).Err())
	}
	for i, name := range []string{"cb", "probes", "quota", "inflight", "advertised"} {
		if d, ok := c.ttls[name]; ok {
			require.NoError(t, cl.PExpire(ctx, keys[i], d).Err())
		}
	}
}

// keysState is everything a source's four keys hold, for comparison.
func keysState(t *testing.T, ctx context.Context, cl goredis.UniversalClient, keys []string) []string {
	t.Helper()
	var out []string
	for i, k := range keys {
		typ, err := cl.Type(ctx, k).Result()
		require.NoError(t, err)
		var v any
		switch typ {
		case "hash":
			v, err = cl.HGetAll(ctx, k).Result()
		case "zset":
			v, err = cl.ZRangeWithScores(ctx, k, 0, -1).Result()
		}
		require.NoError(t, err)
		pttl, err := cl.PTTL(ctx, k).Result()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("key %d %s %v pttl %v", i, typ, v, pttl))
	}
	return out
}

// miniAtEpoch is a client on a miniredis of its own whose TIME stands
// still at testutil.Epoch, so that scripts run in turn decide at the same
// instant.
func miniAtEpoch(t *testing.T) *goredis.Client {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(testutil.Epoch)
	cl := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// realRedisRig is a client on a real redis-server, and a key prefix of its
// own (name and the time) for the test's gates.
func realRedisRig(t *testing.T, name string) (*goredis.Client, string) {
	t.Helper()
	srv := testutil.StartRedis(t)
	cl := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = cl.Close() })
	return cl, name + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// threeInState is a quota on prefix with three sources under c's limits
// whose keys all hold c's state — for the script without its first block,
// the script as shipped and the marked copy — and their names, in that
// order.
func threeInState(t *testing.T, ctx context.Context, cl goredis.UniversalClient, prefix string, i int, c admitCase) (*Quota, []string) {
	t.Helper()
	names := []string{fmt.Sprintf("w%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("m%d", i)}
	limits := map[string]gate.Limits{}
	for _, n := range names {
		limits[n] = c.limits
	}
	q, err := NewQuota(cl, prefix, limits)
	require.NoError(t, err)
	for _, n := range names {
		seedAdmitCase(t, ctx, cl, q.admitKeys(n), c)
	}
	return q, names
}

// requireSameKeys fails unless the keys of names[1:] hold what names[0]'s
// hold.
func requireSameKeys(t *testing.T, ctx context.Context, cl goredis.UniversalClient, q *Quota, names []string, msg ...any) {
	t.Helper()
	want := keysState(t, ctx, cl, q.admitKeys(names[0]))
	for _, n := range names[1:] {
		require.Equal(t, want, keysState(t, ctx, cl, q.admitKeys(n)), msg...)
	}
}

// runAdmitScript runs sc as the admission of source with est tokens and
// the permit ID id, and returns its reply or error.
func runAdmitScript(ctx context.Context, q *Quota, rb *Breaker, sc *script, source string, withBudget bool, est int64, id string) ([10]int64, error) {
	var head []any
	if s := q.sources[source]; s != nil {
		head = s.admitHead(q, rb, withBudget)
	} else { // a source without limits, as admit builds it
		keys := q.admitKeys(source)
		if !withBudget {
			keys = keys[:4]
		}
		head = q.newAdmitHead(rb, keys, noLimits, "0")
	}
	args := make([]any, len(head), len(head)+2)
	copy(args, head)
	args[1] = sc.Hash()
	args = append(args, est, id)
	var v [10]int64
	err := ints(runArgs(ctx, q.c, sc.src, args), v[:])
	return v, err
}

func TestAdmitFastBlockWritesWhatTheWholeScriptWrites(t *testing.T) {
	cl := miniAtEpoch(t)
	ctx := context.Background()
	now := testutil.Epoch.UnixMicro()
	rb, err := NewBreaker(cl, "fast", gate.Policy{})
	require.NoError(t, err)
	ttlMS, err := strconv.ParseInt(rb.policy[0].(string), 10, 64)
	require.NoError(t, err)

	r := rand.New(rand.NewPCG(1, 2))
	var decided, decidedBudget, left int
	edges := edgeAdmitCases(now, ttlMS)
	for i := range 2000 {
		c := randomAdmitCase(r, now, ttlMS)
		if i < len(edges) {
			c = edges[i]
		}
		// Three sources in the same state: the script without the block,
		// the script as shipped, and the marked one that tells whether the
		// block decided.
		q, names := threeInState(t, ctx, cl, "fast", i, c)
		id := "permit-" + strconv.Itoa(i)
		want, wantErr := runAdmitScript(ctx, q, rb, admitWithoutFast, names[0], c.withBudget, c.est, id)
		got, gotErr := runAdmitScript(ctx, q, rb, scriptAdmit, names[1], c.withBudget, c.est, id)
		marked, markedErr := runAdmitScript(ctx, q, rb, admitMarked, names[2], c.withBudget, c.est, id)
		require.Equal(t, wantErr, gotErr, "case %d: %s", i, c)
		require.Equal(t, wantErr, markedErr, "case %d: %s", i, c)
		require.Equal(t, want, got, "case %d: %s", i, c)
		requireSameKeys(t, ctx, cl, q, names, "case %d: %s", i, c)
		if i < len(edges) {
			// The edges: a bucket filled exactly is the block's to allow;
			// one a scaled unit over, the rest of the script's to refuse.
			require.Equal(t, i%2 == 1 || i == 0, marked[9] == 42, "edge case %d: %s", i, c)
		}
		if marked[9] == 42 && c.withBudget {
			decidedBudget++
		}
		if marked[9] == 42 {
			decided++
			marked[9] = 0
		} else {
			left++
		}
		require.Equal(t, want, marked, "case %d: %s", i, c)
	}
	// Neither half of the comparison is empty: the block decided some
	// cases and left others to the rest of the script.
	t.Logf("the block decided %d cases (%d with the budget) and left %d", decided, decidedBudget, left)
	require.Greater(t, decided, 200)
	require.Greater(t, decidedBudget, 50, "with the advertised budget too")
	require.Greater(t, left, 200)
}

// TestAdmitFastBlockDecidesTheCommonCase runs governed admissions on a
// real redis-server, as a source sees them: after the first admission of
// a source (which writes the units and expiries), every admission of a Closed breaker with room is decided
// by the first block, with the advertised budget or without; a full
// bucket, a lease set at its limit and an Open breaker are left to the
// rest of the script, which rejects them.
func TestAdmitFastBlockDecidesTheCommonCase(t *testing.T) {
	cl, prefix := realRedisRig(t, "fastreal")
	ctx := context.Background()
	rb, err := NewBreaker(cl, prefix, gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute})
	require.NoError(t, err)
	q, err := NewQuota(cl, prefix, map[string]gate.Limits{"s": {RPM: 5, TPM: 1_000_000, MaxInFlight: 3}})
	require.NoError(t, err)

	admit := func(id string) [10]int64 {
		t.Helper()
		v, err := runAdmitScript(ctx, q, rb, admitMarked, "s", false, 10, id)
		require.NoError(t, err)
		return v
	}
	v := admit("a")
	require.Equal(t, int64(1), v[7], "the first admission is allowed")
	require.NotEqual(t, int64(42), v[9], "the first admission writes the units and expiries: not the block's")
	for _, id := range []string{"b", "c"} {
		v = admit(id)
		require.Equal(t, [10]int64{1, 0, 0, 0, v[4], v[5], 0, 1, 0, 42}, v, "admission %s", id)
	}
	n, err := cl.ZCard(ctx, q.admitKeys("s")[3]).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "the block adds each admission's lease")

	v = admit("d")
	require.Equal(t, int64(0), v[7], "a fourth call is over MaxInFlight 3")
	require.Equal(t, int64(3), v[9], "refused for in_flight, by the rest of the script")

	require.NoError(t, cl.ZRem(ctx, q.admitKeys("s")[3], "a", "b").Err())
	v = admit("e")
	require.Equal(t, int64(42), v[9], "with room again the block decides")
	v, err = runAdmitScript(ctx, q, rb, admitMarked, "s", true, 10, "e2")
	require.NoError(t, err)
	require.Equal(t, int64(42), v[9], "with the advertised budget too: the fifth request in a minute")
	blind, err := cl.HGet(ctx, q.admitKeys("s")[4], "n").Int64()
	require.NoError(t, err)
	require.Equal(t, int64(1), blind, "a take while the budget knows nothing is counted")
	require.NoError(t, cl.ZRem(ctx, q.admitKeys("s")[3], "e2").Err())
	v = admit("g")
	require.Equal(t, int64(0), v[7], "the sixth request in a minute is over RPM 5")
	require.Equal(t, int64(1), v[9], "refused for rpm, by the rest of the script")

	require.NoError(t, cl.ZRem(ctx, q.admitKeys("s")[3], "c", "e").Err())
	require.NoError(t, cl.HSet(ctx, q.admitKeys("s")[2], "rl", "0").Err()) // room again
	n, err = cl.Exists(ctx, q.admitKeys("s")[3]).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the emptied lease set is gone")
	v = admit("i")
	require.Equal(t, int64(42), v[9], "one call at a time: the block admits into an empty lease set too")
	pttl, err := cl.PTTL(ctx, q.admitKeys("s")[3]).Result()
	require.NoError(t, err)
	require.Greater(t, pttl, q.Lease(), "the new set lives two lease lengths")
	require.NoError(t, cl.ZRem(ctx, q.admitKeys("s")[3], "i").Err())
	d := gate.Decision{Allowed: true, State: gate.Closed, Token: uint64(v[4]), Generation: uint64(v[5])}
	_, err = rb.Record(ctx, "s", d, gate.Failure)
	require.NoError(t, err)
	v = admit("h")
	require.Equal(t, int64(0), v[0], "the breaker is Open after the failure")
	require.Equal(t, int64(gate.Open), v[1])
}
