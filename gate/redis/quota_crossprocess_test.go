package redis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The cross-process accuracy test re-executes the test binary: a child runs
// TestQuotaCrossProcessAccuracy with quotaChildEnv set and hammers the gate
// instead of testing.
const (
	quotaChildEnv = "PGW_QUOTA_TEST_CHILD" // JSON quotaChildSpec
	qcpProcs      = 4
	qcpWorkers    = 16
	qcpRPM        = 600
	qcpTPM        = 600_000
	qcpRun        = 3 * time.Second
	qcpSource     = "hammered"
)

// quotaChildSpec tells a child what to hammer and when.
type quotaChildSpec struct {
	Addr, Scope, Out string
	Limits           gate.Limits
	// Start and End are wall-clock instants (the server's clock is the same
	// host's); nobody acquires before Start or after End.
	Start, End time.Time
	// Settle: draw estimates of 100..300 tokens and settle each permit to
	// between half and one and a half times its estimate.
	Settle bool
	Seed   uint64
}

// quotaChildResult is what a child admitted.
type quotaChildResult struct {
	Admitted  int
	EstTokens int64
	Tokens    int64     // actual, as settled
	MaxDebit  int64     // largest actual − estimate
	Last      time.Time // when the last granted Acquire returned
	Errors    []string
}

// 4 processes × 16 goroutines hammer one source; the
// admissions never exceed what the limit allows for the elapsed window, and
// at least 95% of it is used.
func TestQuotaCrossProcessAccuracy(t *testing.T) {
	if spec := os.Getenv(quotaChildEnv); spec != "" {
		runQuotaChild(t, spec)
		return
	}
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)

	t.Run("RPM", func(t *testing.T) {
		n, _, s, e, t1 := hammer(t, srv.Addr, c, gate.Limits{RPM: qcpRPM}, false)
		interval := time.Minute / qcpRPM
		// Nobody acquires before s and the bucket is fresh then: at most a
		// minute's allowance plus one request per interval until t1, the
		// last admission.
		allowed := qcpRPM + int(t1.Sub(s)/interval)
		due := qcpRPM + int(e.Sub(s)/interval) // what [s, e] offers
		ratePart := float64(n-qcpRPM) / float64(e.Sub(s)/interval)
		t.Logf("RPM %d, %d processes × %d goroutines, %v: admitted %d, allowed %d (burst %d + refill until the last admission), offered %d until the end of hammering: utilisation %.1f%% (refill part %.1f%%)",
			qcpRPM, qcpProcs, qcpWorkers, e.Sub(s), n, allowed, qcpRPM, due, 100*float64(n)/float64(due), 100*ratePart)
		assert.LessOrEqual(t, n, allowed, "admissions never exceed the limit")
		assert.GreaterOrEqual(t, float64(n), 0.95*float64(due), "≥ 95%% of the allowance is used")
	})

	t.Run("TPM", func(t *testing.T) {
		n, r, s, e, t1 := hammer(t, srv.Addr, c, gate.Limits{TPM: qcpTPM}, true)
		perSec := int64(qcpTPM / 60)
		// Settled tokens of everything admitted: at most the minute's
		// allowance, plus the refill until t1 (the last admission), plus the
		// debits of the permits still unsettled then (each ≤ MaxDebit, at
		// most one per goroutine).
		allowed := int64(qcpTPM) + int64(t1.Sub(s).Seconds()*float64(perSec)) + qcpProcs*qcpWorkers*r.MaxDebit
		due := int64(qcpTPM) + int64(e.Sub(s).Seconds()*float64(perSec))
		ratePart := float64(r.Tokens-qcpTPM) / (e.Sub(s).Seconds() * float64(perSec))
		t.Logf("TPM %d, %d processes × %d goroutines, %v: %d requests admitted, estimated %d tokens, settled %d tokens (max debit %d); allowed %d (%d of it for debits unsettled at the last admission), offered %d until the end of hammering: utilisation %.1f%% (refill part %.1f%%)",
			qcpTPM, qcpProcs, qcpWorkers, e.Sub(s), n, r.EstTokens, r.Tokens, r.MaxDebit, allowed, qcpProcs*qcpWorkers*r.MaxDebit, due, 100*float64(r.Tokens)/float64(due), 100*ratePart)
		assert.LessOrEqual(t, r.Tokens, allowed, "settled tokens never exceed the limit")
		assert.GreaterOrEqual(t, float64(r.Tokens), 0.95*float64(due), "≥ 95%% of the allowance is used")
	})
}

// hammer runs the children on a fresh scope and sums their results; it
// returns the admissions, the sums, the window [s, e] and the instant t1 the
// last granted Acquire returned (no admission happened after it).
func hammer(t *testing.T, addr string, c *goredis.Client, l gate.Limits, settle bool) (int, quotaChildResult, time.Time, time.Time, time.Time) {
	t.Helper()
	scope := uniqueScope()
	dir := t.TempDir()
	// A second for the children to start and load the scripts: nobody
	// acquires before s.
	s := time.Now().Add(time.Second)
	e := s.Add(qcpRun)
	cmds := make([]*exec.Cmd, qcpProcs)
	outs := make([]*bytes.Buffer, qcpProcs)
	for i := range cmds {
		spec, err := json.Marshal(quotaChildSpec{
			Addr: addr, Scope: scope, Out: filepath.Join(dir, strconv.Itoa(i)+".json"),
			Limits: l, Start: s, End: e, Settle: settle, Seed: uint64(i + 1),
		})
		require.NoError(t, err)
		cmd := exec.Command(os.Args[0], "-test.run=^TestQuotaCrossProcessAccuracy$", "-test.count=1")
		cmd.Env = append(os.Environ(), quotaChildEnv+"="+string(spec))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cmds[i], outs[i] = cmd, out
	}
	var sum quotaChildResult
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "child %d:\n%s", i, outs[i])
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)+".json"))
		require.NoError(t, err)
		var r quotaChildResult
		require.NoError(t, json.Unmarshal(b, &r))
		require.Empty(t, r.Errors, "child %d", i)
		sum.Admitted += r.Admitted
		sum.EstTokens += r.EstTokens
		sum.Tokens += r.Tokens
		sum.MaxDebit = max(sum.MaxDebit, r.MaxDebit)
		if r.Last.After(sum.Last) {
			sum.Last = r.Last
		}
	}
	t1, err := c.Time(t.Context()).Result()
	require.NoError(t, err)
	require.False(t, sum.Last.After(t1), "the last admission returned before the server's clock read after the children")
	return sum.Admitted, sum, s, e, sum.Last
}

// runQuotaChild is the child's side: qcpWorkers goroutines acquire from Start
// to End, sleeping RetryAfter after a rejection, and settle and release what
// they were granted.
func runQuotaChild(t *testing.T, raw string) {
	var spec quotaChildSpec
	require.NoError(t, json.Unmarshal([]byte(raw), &spec))
	c := goredis.NewClient(&goredis.Options{Addr: spec.Addr, PoolSize: qcpWorkers})
	defer c.Close()
	q, err := redis.NewQuota(c, spec.Scope, map[string]gate.Limits{qcpSource: spec.Limits})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, q.Preload(ctx))

	var (
		mu  sync.Mutex
		res quotaChildResult
		wg  sync.WaitGroup
	)
	time.Sleep(time.Until(spec.Start)) // the common start instant
	for w := range qcpWorkers {
		rng := rand.New(rand.NewPCG(spec.Seed, uint64(w)))
		wg.Go(func() {
			var r quotaChildResult
			for time.Now().Before(spec.End) {
				est := int64(0)
				if spec.Settle {
					est = 100 + rng.Int64N(201)
				}
				p, d, err := q.Acquire(ctx, qcpSource, est)
				if err != nil {
					r.Errors = append(r.Errors, err.Error())
					break
				}
				if !d.Allowed {
					time.Sleep(max(d.RetryAfter, time.Millisecond))
					continue
				}
				r.Admitted++
				r.Last = time.Now() // not before the server admitted it
				r.EstTokens += est
				actual := est
				if spec.Settle {
					actual = est/2 + rng.Int64N(est+1)
					if err := q.Settle(ctx, p, actual); err != nil {
						r.Errors = append(r.Errors, err.Error())
					}
				}
				r.Tokens += actual
				r.MaxDebit = max(r.MaxDebit, actual-est)
				if err := q.Release(ctx, p); err != nil {
					r.Errors = append(r.Errors, err.Error())
				}
			}
			mu.Lock()
			res.Admitted += r.Admitted
			res.EstTokens += r.EstTokens
			res.Tokens += r.Tokens
			res.MaxDebit = max(res.MaxDebit, r.MaxDebit)
			if r.Last.After(res.Last) {
				res.Last = r.Last
			}
			res.Errors = append(res.Errors, r.Errors...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(spec.Out, b, 0o600))
}
