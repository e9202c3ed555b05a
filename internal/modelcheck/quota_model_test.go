package modelcheck

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Sizes of the quota runs: quota scripts are lighter than the breaker's, and
// the interesting states (a bucket at its edge) come quickly.
const (
	quotaSeeds     = 200
	quotaSeedsRace = 40
	quotaSteps     = 200
)

// quotaRun is one generated quota sequence and how it ended.
type quotaRun struct {
	seed   uint64
	limits map[string]gate.Limits
	lease  time.Duration
	seq    []Step
	div    *divergence
	cov    quotaCoverage
}

// generateQuota draws limits, a lease length and n steps from seed, running
// each step as it is drawn; it stops at the first divergence.
func generateQuota(rg rig, seed uint64, n int) (quotaRun, error) {
	r := newRand(seed ^ 0x71)
	real := !rg.exact()
	limits := randomLimits(r, real)
	lease := time.Duration(50+r.IntN(4951)) * time.Millisecond
	if real {
		lease = time.Duration(150+r.IntN(251)) * time.Millisecond
	}
	w, err := rg.quotaWorld(limits, lease)
	if err != nil {
		return quotaRun{}, err
	}
	g := &quotaGen{r: r, limits: limits, real: real, last: map[string]Step{}}
	out := quotaRun{seed: seed, limits: limits, lease: lease}
	for range n {
		s := g.next(w)
		out.seq = append(out.seq, s)
		if d := w.exec(s); d != "" {
			out.div = &divergence{step: len(out.seq) - 1, what: d}
			break
		}
		if w.raced {
			break
		}
	}
	out.cov = w.stats
	return out, nil
}

func replayQuota(rg rig, f quotaRun, steps []Step) (*divergence, error) {
	w, err := rg.quotaWorld(f.limits, f.lease)
	if err != nil {
		return nil, err
	}
	return w.run(steps), nil
}

func shrinkQuota(rg rig, f quotaRun, budget int) ([]Step, *divergence) {
	fails := func(c []Step) bool {
		d, err := replayQuota(rg, f, c)
		return err == nil && d != nil
	}
	seq := Normalize(f.seq)
	if !fails(seq) {
		return f.seq, f.div
	}
	seq = Shrink(seq, fails, Normalize, budget)
	d, _ := replayQuota(rg, f, seq)
	return seq, d
}

func reportQuota(test string, f quotaRun, shrunk []Step, d *divergence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory and Redis quota gates diverge: seed %d\n", f.seed)
	fmt.Fprintf(&b, "replay: go test ./internal/modelcheck -run '^%s$' -pgw.seed=%d -v\n", test, f.seed)
	fmt.Fprintf(&b, "shrunk from %d to %d steps; as a regression test in package modelcheck:\n\n", len(f.seq), len(shrunk))
	fmt.Fprintf(&b, "\tcheckQuota(t, %s, %d*time.Millisecond, []Step{\n%s\t})\n\n", limitsExpr(f.limits), f.lease.Milliseconds(), Format(shrunk, "\t\t"))
	if d != nil && d.step < len(shrunk) {
		fmt.Fprintf(&b, "at step %d, %#v: %s", d.step+1, shrunk[d.step], d.what)
	}
	if f.div != nil {
		fmt.Fprintf(&b, "\n(original sequence: at step %d, %#v: %s)", f.div.step+1, f.seq[f.div.step], f.div.what)
	}
	return b.String()
}

// checkQuota replays steps on the memory and Redis quota gates (miniredis)
// with the given limits and Redis lease length, and fails t at the first
// difference. Shrunk quota sequences paste into it.
func checkQuota(t *testing.T, limits map[string]gate.Limits, lease time.Duration, steps []Step) {
	t.Helper()
	w, err := newMiniRig(t).quotaWorld(limits, lease)
	require.NoError(t, err)
	steps = Normalize(steps)
	if d := w.run(steps); d != nil {
		t.Errorf("at step %d, %#v: %s", d.step+1, steps[d.step], d.what)
	}
}

// runMiniQuota generates quota seeds on workers, one miniredis each.
func runMiniQuota(t *testing.T, seeds []uint64, n int, wrap func(gate.QuotaGate) gate.QuotaGate) ([]quotaRun, int, quotaCoverage) {
	t.Helper()
	workers := min(2, len(seeds))
	rigs := make([]*miniRig, workers)
	for i := range rigs {
		rigs[i] = newMiniRig(t)
		rigs[i].wrapQuota = wrap
	}
	var (
		failures []quotaRun
		errs     []error
		total    int
		cov      quotaCoverage
	)
	fanOut(rigs, seeds, func(rg *miniRig, seed uint64) {
		f, err := generateQuota(rg, seed, n)
		collect(func() {
			total += len(f.seq)
			cov.add(f.cov)
			if err != nil {
				errs = append(errs, fmt.Errorf("seed %d: %w", seed, err))
			} else if f.div != nil {
				failures = append(failures, f)
			}
		})
	})
	require.Empty(t, errs)
	slices.SortFunc(failures, func(a, b quotaRun) int { return cmp.Compare(a.seed, b.seed) })
	return failures, total, cov
}

// TestQuotaModelMiniredis: many random Acquire/Settle/Release sequences with
// advances on simulated time give identical decisions and exact RetryAfter
// values from the memory and Redis quota gates, and every retry at the
// instant a rejection named is admitted by the rate limits (one a ms earlier
// is not).
func TestQuotaModelMiniredis(t *testing.T) {
	def := quotaSeeds
	if underRace {
		def = quotaSeedsRace
	}
	seeds := seedList(t, orDefault(*flagSeeds, def))
	n := orDefault(*flagSteps, quotaSteps)
	failures, steps, cov := runMiniQuota(t, seeds, n, nil)
	if len(seeds) == 1 && len(failures) == 0 {
		f, err := generateQuota(newMiniRig(t), seeds[0], n)
		require.NoError(t, err)
		t.Logf("seed %d: %s, lease %v\n%s", seeds[0], limitsExpr(f.limits), f.lease, Format(f.seq, "\t"))
	}
	t.Logf("%d seeds × %d steps: %d steps run, %d diverging seeds\n%v", len(seeds), n, steps, len(failures), cov)
	if len(failures) == 0 {
		return
	}
	rg := newMiniRig(t)
	for _, f := range failures[:min(len(failures), reportFailures)] {
		shrunk, d := shrinkQuota(rg, f, shrinkBudget)
		t.Errorf("%s", reportQuota(t.Name(), f, shrunk, d))
	}
	if len(failures) > reportFailures {
		var more []string
		for _, f := range failures[reportFailures:] {
			more = append(more, strconv.FormatUint(f.seed, 10))
		}
		t.Errorf("%d more diverging seeds: %s", len(more), strings.Join(more, " "))
	}
}

// TestQuotaModelRedisServer: a few short quota sequences on a real
// redis-server and real time agree within realTolerance.
func TestQuotaModelRedisServer(t *testing.T) {
	t.Parallel() // it mostly sleeps: overlap it with the simulated runs
	srv := testutil.StartRedis(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	rg := &realRig{c: c}
	seeds := seedList(t, realSeeds)
	runs := make([]quotaRun, len(seeds))
	errs := make([]error, len(seeds))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() { runs[i], errs[i] = generateQuota(rg, seed, realSteps) })
	}
	wg.Wait()
	var cov quotaCoverage
	n := 0
	for i, f := range runs {
		require.NoError(t, errs[i])
		n += len(f.seq)
		cov.add(f.cov)
		if f.div == nil {
			continue
		}
		again := 0
		for range 2 {
			if d, err := replayQuota(rg, f, f.seq); err == nil && d != nil {
				again++
			}
		}
		if again == 0 {
			t.Logf("seed %d: divergence did not reproduce in 2 replays (a race with the real clock?): step %d, %#v: %s",
				f.seed, f.div.step+1, f.seq[f.div.step], f.div.what)
			continue
		}
		shrunk, d := shrinkQuota(rg, f, 40)
		t.Errorf("%s", reportQuota(t.Name(), f, shrunk, d))
	}
	t.Logf("%d seeds × %d steps on redis-server %s: %d steps run\n%v", len(seeds), realSteps, srv.Addr, n, cov)
}

// settleIgnored is a planted bug: a quota gate whose Settle forgets refunds.
type settleIgnored struct{ gate.QuotaGate }

func (g settleIgnored) Settle(ctx context.Context, p gate.Permit, actual int64) error {
	if actual < p.Tokens {
		return nil
	}
	return g.QuotaGate.Settle(ctx, p, actual)
}

// TestQuotaModelFindsAPlantedBug checks the quota harness itself.
func TestQuotaModelFindsAPlantedBug(t *testing.T) {
	wrap := func(g gate.QuotaGate) gate.QuotaGate { return settleIgnored{g} }
	failures, _, _ := runMiniQuota(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 200, wrap)
	require.NotEmpty(t, failures, "the planted bug went unnoticed")
	rg := newMiniRig(t)
	rg.wrapQuota = wrap
	shrunk, d := shrinkQuota(rg, failures[0], shrinkBudget)
	require.NotNil(t, d)
	assert.LessOrEqual(t, len(shrunk), 8, "shrunk sequence:\n%s", Format(shrunk, "\t"))
	t.Logf("planted quota bug, as reported:\n%s", reportQuota("TestX", failures[0], shrunk, d))
}

// TestQuotaLeaseExpiryFreesTheSlotInBothGates pins the harness's model of
// Redis in-flight leases: at grant + lease the slot is free again (the
// harness releases it in the memory gate), and the permit's own Release
// afterwards frees nothing more.
func TestQuotaLeaseExpiryFreesTheSlotInBothGates(t *testing.T) {
	checkQuota(t, map[string]gate.Limits{"a": {MaxInFlight: 1}}, 100*time.Millisecond, []Step{
		Acquire("a", 1, 0),
		Acquire("a", 2, 0), // rejected: in flight
		Advance(99),
		Acquire("a", 3, 0), // still rejected
		Advance(1),
		Acquire("a", 4, 0), // the lease of 1 expired: granted
		Release(1),         // frees nothing
		Acquire("a", 5, 0), // rejected: 4 holds the slot
		Release(4),
		Acquire("a", 6, 0),
	})
}
