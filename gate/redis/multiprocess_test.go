package redis_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// Environment of a child process.
const (
	childRole  = "PGW_REDIS_TEST_CHILD" // "probe" or "hold"
	childAddr  = "PGW_REDIS_TEST_ADDR"
	childScope = "PGW_REDIS_TEST_SCOPE"
)

const (
	processes  = 4
	goroutines = 16
	mpSource   = "upstream"
)

// mpPolicy is the policy parent and children share (same binary, same
// function): real short durations.
func mpPolicy() gate.Policy {
	return gate.Policy{
		ConsecutiveFailures: 1,
		Cooldown:            100 * time.Millisecond,
		MaxCooldown:         time.Second,
		ProbeTTL:            300 * time.Millisecond,
	}
}

// roundResult is what a "probe" child reports per round.
type roundResult struct {
	Granted  []uint64 `json:"granted"`
	Rejected int      `json:"rejected"`
	Bad      []string `json:"bad"` // errors and rejections off the contract
}

// holdResult is what a "hold" child reports before it blocks.
type holdResult struct {
	Allowed bool   `json:"allowed"`
	Probe   bool   `json:"probe"`
	Token   uint64 `json:"token"`
	Err     string `json:"err"`
}

// runChild is a child process: it speaks JSON lines on stdout and takes
// commands as lines on stdin. It returns the exit code.
func runChild(role string) int {
	c := goredis.NewClient(&goredis.Options{Addr: os.Getenv(childAddr)})
	defer c.Close()
	b, err := redis.NewBreaker(c, os.Getenv(childScope), mpPolicy())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	if err := b.Preload(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	switch role {
	case "probe":
		_ = out.Encode(map[string]bool{"ready": true})
		for in.Scan() { // one round per line
			_ = out.Encode(probeRound(ctx, b))
		}
		return 0
	case "hold":
		d, err := b.TryEnter(ctx, mpSource)
		r := holdResult{Allowed: d.Allowed, Probe: d.Probe, Token: d.Token}
		if err != nil {
			r.Err = err.Error()
		}
		_ = out.Encode(r)
		for in.Scan() { // hold the lease until killed; never record
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}

// probeRound runs goroutines TryEnters released at once.
func probeRound(ctx context.Context, b *redis.Breaker) roundResult {
	var (
		mu  sync.Mutex
		res roundResult
		wg  sync.WaitGroup
	)
	start := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			<-start
			d, err := b.TryEnter(ctx, mpSource)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.Bad = append(res.Bad, err.Error())
			case d.Allowed && d.Probe:
				res.Granted = append(res.Granted, d.Token)
			case !d.Allowed && d.State == gate.HalfOpen && d.RetryAfter == 0:
				res.Rejected++
			default:
				res.Bad = append(res.Bad, fmt.Sprintf("%+v", d))
			}
		})
	}
	close(start)
	wg.Wait()
	return res
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *json.Decoder
}

func startChild(t *testing.T, role, addr, scope string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRole+"="+role, childAddr+"="+addr, childScope+"="+scope)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ch := &child{cmd: cmd, stdin: stdin, out: json.NewDecoder(stdout)}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return ch
}

func (c *child) read(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, c.out.Decode(v), "child pid %d", c.cmd.Process.Pid)
}

// tripAndWait opens the source and waits (real time) until its cooldown has
// ended, by the server's clock.
func tripAndWait(t *testing.T, b *redis.Breaker) {
	t.Helper()
	ctx := t.Context()
	d, err := b.TryEnter(ctx, mpSource)
	require.NoError(t, err)
	u, err := b.Record(ctx, mpSource, d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
	time.Sleep(u.RetryAfter)
	ra, err := b.RetryAfter(ctx, []string{mpSource})
	require.NoError(t, err)
	require.Zero(t, ra, "cooldown over")
}

// 4 processes × 16 goroutines hit a source whose cooldown just ended: exactly
// one probe lease is granted across all of them, every other caller is
// rejected HalfOpen with RetryAfter 0. When that lease expires unrecorded,
// the next round again grants exactly one, with a new token.
func TestProbeLeaseIsExclusiveAcrossProcesses(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	scope := uniqueScope()
	b, err := redis.NewBreaker(c, scope, mpPolicy())
	require.NoError(t, err)

	children := make([]*child, processes)
	for i := range children {
		children[i] = startChild(t, "probe", srv.Addr, scope)
	}
	for _, ch := range children {
		var ready map[string]bool
		ch.read(t, &ready)
		require.True(t, ready["ready"])
	}
	tripAndWait(t, b)

	round := func() (granted []uint64) {
		t.Helper()
		for _, ch := range children {
			_, err := io.WriteString(ch.stdin, "go\n")
			require.NoError(t, err)
		}
		rejected := 0
		for _, ch := range children {
			var r roundResult
			ch.read(t, &r)
			assert.Empty(t, r.Bad, "off-contract answers")
			granted = append(granted, r.Granted...)
			rejected += r.Rejected
		}
		// One lease at a time across the processes: a round normally grants
		// one. A round slower than ProbeTTL (a loaded machine) may see the
		// unrecorded lease expire and a new one granted, which is the
		// contract too, so what is asserted is that no two leases were
		// alive at once. A lease's token is a number of the record's
		// sequence, which never falls below the server's clock in µs:
		// leases granted one after the other, while one is alive, would
		// have tokens less than ProbeTTL apart (a millisecond is left for a
		// token a few numbers above the clock).
		require.NotEmpty(t, granted, "a probe lease across %d processes", processes)
		slices.Sort(granted)
		apart := uint64((mpPolicy().ProbeTTL - time.Millisecond).Microseconds())
		for i := 1; i < len(granted); i++ {
			require.GreaterOrEqual(t, granted[i]-granted[i-1], apart,
				"two probe leases alive at once across %d processes: %v", processes, granted)
		}
		if len(granted) > 1 {
			t.Logf("a round outlived ProbeTTL: %d leases one after another", len(granted))
		}
		assert.Equal(t, processes*goroutines-len(granted), rejected)
		return granted[:1]
	}
	first := round()
	time.Sleep(mpPolicy().ProbeTTL) // real time: the unrecorded lease expires
	second := round()
	assert.NotEqual(t, first[0], second[0], "an expired lease's slot gets a new token")

	for _, ch := range children {
		require.NoError(t, ch.stdin.Close())
		require.NoError(t, ch.cmd.Wait(), "child exit")
	}
}

// A probe holder killed with SIGKILL leaves its lease behind until ProbeTTL;
// then the next caller gets a new token, and the dead holder's outcome
// replayed with its old token changes nothing.
func TestKilledProbeHolderLeaseExpiresAtProbeTTL(t *testing.T) {
	srv := testutil.StartRedis(t)
	c := realClient(t, srv.Addr)
	scope := uniqueScope()
	b, err := redis.NewBreaker(c, scope, mpPolicy())
	require.NoError(t, err)
	ctx := t.Context()
	tripAndWait(t, b)

	holder := startChild(t, "hold", srv.Addr, scope)
	var held holdResult
	holder.read(t, &held)
	granted := time.Now() // at or after the grant
	require.Empty(t, held.Err)
	require.True(t, held.Allowed && held.Probe, "the holder got the probe: %+v", held)
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGKILL))
	_ = holder.cmd.Wait()

	// The dead holder's lease still occupies the slot.
	d, err := b.TryEnter(ctx, mpSource)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, gate.HalfOpen, d.State)
	assert.Zero(t, d.RetryAfter, "HalfOpen rejection: 0, never the lease length")
	s, err := b.Snapshot(ctx, mpSource)
	require.NoError(t, err)
	assert.Equal(t, 1, s.ProbesInFlight)

	time.Sleep(time.Until(granted.Add(mpPolicy().ProbeTTL))) // real time
	next, err := b.TryEnter(ctx, mpSource)
	require.NoError(t, err)
	require.True(t, next.Allowed && next.Probe, "after ProbeTTL the next caller gets the lease: %+v", next)
	assert.Greater(t, next.Token, held.Token, "a new token")

	before, err := b.Snapshot(ctx, mpSource)
	require.NoError(t, err)
	stale := gate.Decision{Allowed: true, State: gate.HalfOpen, Probe: true, Token: held.Token}
	for _, o := range []gate.Outcome{gate.Failure, gate.Success, gate.Released} {
		u, err := b.Record(ctx, mpSource, stale, o)
		require.NoError(t, err)
		assert.False(t, u.Applied, "replayed %v of the dead holder", o)
		assert.Equal(t, gate.HalfOpen, u.State)
		assert.Zero(t, u.RetryAfter)
	}
	after, err := b.Snapshot(ctx, mpSource)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the replay changed the record")

	u, err := b.Record(ctx, mpSource, next, gate.Success)
	require.NoError(t, err)
	assert.True(t, u.Applied)
	assert.Equal(t, gate.Closed, u.State)
}
