// Command distributed shows one circuit breaker shared by several
// processes through Redis: three worker processes guard the same flaky
// upstream with breaker.New("payments-api", …) on the Redis gate, so what one
// process learns the others obey at once.
//
//	redis-server --port 6379 --save '' &     (any reachable Redis will do)
//	go run ./examples/distributed -redis 127.0.0.1:6379
//
// The timeline (the upstream is down during the first second):
//
//	0.0s  worker 1 calls three times, fails three times: the shared breaker opens
//	0.3s  workers 2 and 3 are rejected without calling the upstream, with the
//	      RetryAfter of the shared record
//	1.2s  the cooldown is over; all three call at once: exactly one of them
//	      (whichever Redis served first) gets the probe, the others are
//	      rejected with RetryAfter 0 and retry shortly
//	      the probe succeeds: the breaker closes for every process
//
// The program starts the workers itself (it re-runs its own binary with
// -worker); each prints what it sees, prefixed by its number.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

const (
	name    = "payments-api" // the breaker's name: the source key in Redis
	scope   = "demo"
	workers = 3
)

// policy is the shared breaker's policy; every worker must use the same.
var policy = gate.Policy{
	ConsecutiveFailures: 3,
	Cooldown:            time.Second,
	MaxCooldown:         10 * time.Second,
	ProbeTTL:            2 * time.Second,
}

var errUnavailable = errors.New("503 service unavailable")

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address (host:port)")
	prefix := flag.String("prefix", "pgw-demo", "key prefix in Redis")
	worker := flag.Int("worker", 0, "internal: run as worker N")
	startMs := flag.Int64("start", 0, "internal: the demo's start, unix ms")
	flag.Parse()

	var err error
	if *worker > 0 {
		err = runWorker(*worker, *addr, *prefix, time.UnixMilli(*startMs))
	} else {
		err = runParent(*addr, *prefix)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		os.Exit(1)
	}
}

// runParent clears the demo's record, starts the workers and relays their
// output.
func runParent(addr, prefix string) error {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w (start one: redis-server --port 6379 --save '')", addr, err)
	}
	rb, err := redis.NewBreaker(c, scope, policy, redis.WithPrefix(prefix))
	if err != nil {
		return err
	}
	if err := c.Del(ctx, rb.Keys(name)...).Err(); err != nil { // start from Closed
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("breaker %q shared through Redis %s (keys %v)\n", name, addr, rb.Keys(name))
	fmt.Printf("policy: open after %d failures in a row, cooldown %v, one probe at a time\n\n", policy.ConsecutiveFailures, policy.Cooldown)

	start := time.Now().Add(300 * time.Millisecond) // time for the workers to start
	var wg sync.WaitGroup
	var out sync.Mutex
	cmds := make([]*exec.Cmd, 0, workers)
	for i := 1; i <= workers; i++ {
		cmd := exec.Command(self, "-worker", strconv.Itoa(i), "-redis", addr, "-prefix", prefix,
			"-start", strconv.FormatInt(start.UnixMilli(), 10))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		cmds = append(cmds, cmd)
		wg.Go(func() { relay(stdout, &out) })
	}
	wg.Wait()
	var failed error
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			failed = errors.Join(failed, fmt.Errorf("worker %v: %w", cmd.Args[2], err))
		}
	}
	return failed
}

func relay(r io.Reader, mu *sync.Mutex) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		mu.Lock()
		fmt.Println(s.Text())
		mu.Unlock()
	}
}

// runWorker is one process: its own Redis client, its own breaker.Breaker,
// the shared record.
func runWorker(n int, addr, prefix string, start time.Time) error {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()

	rb, err := redis.NewBreaker(c, scope, policy, redis.WithPrefix(prefix))
	if err != nil {
		return err
	}
	// Production setup: if Redis goes away, keep a local breaker instead of
	// failing every call (PGW_REDIS_DOWN=fail_open).
	local, err := memory.NewBreaker(policy)
	if err != nil {
		return err
	}
	shared, err := redis.NewFailover(rb, local, redis.FailOpen, slog.Default())
	if err != nil {
		return err
	}
	cb, err := breaker.New(name, breaker.Config{Gate: shared, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}

	say := func(format string, args ...any) {
		fmt.Printf("%5.2fs  [worker %d, pid %d]  %s\n", time.Since(start).Seconds(), n, os.Getpid(), fmt.Sprintf(format, args...))
	}
	cb.OnStateChange(func(ev breaker.StateChange) {
		say("sees the shared breaker go %s → %s", ev.From, ev.To)
	})
	upstream := func(context.Context) error {
		if time.Since(start) < time.Second {
			return errUnavailable
		}
		return nil
	}
	call := func() error {
		called := false
		err := cb.Execute(ctx, func(ctx context.Context) error {
			called = true
			return upstream(ctx)
		})
		var open *breaker.OpenError
		switch {
		case errors.As(err, &open) && open.State == gate.HalfOpen:
			say("rejected: another process holds the probe (retry after %v: at any moment)", open.RetryAfter)
		case errors.As(err, &open):
			say("rejected without calling the upstream: breaker open, retry after %v", open.RetryAfter.Round(time.Millisecond))
		case err != nil && called:
			say("called the upstream: %v", err)
		case err != nil:
			say("gate error: %v", err)
		default:
			say("called the upstream: ok")
		}
		return err
	}
	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }

	// 0.0s: worker 1 meets the outage and trips the shared breaker.
	if n == 1 {
		sleepUntil(0)
		for range policy.ConsecutiveFailures {
			_ = call()
		}
	}
	// 0.3s: the others are stopped by what worker 1 learned.
	if n != 1 {
		sleepUntil(300 * time.Millisecond)
		_ = call()
	}
	// 1.2s: everyone at once; one probe across all processes.
	sleepUntil(1200 * time.Millisecond)
	for range 20 {
		if err := call(); !errors.Is(err, breaker.ErrOpen) {
			break
		}
		time.Sleep(50 * time.Millisecond) // HalfOpen said "any moment": poll briefly
	}
	sleepUntil(1600 * time.Millisecond)
	_ = call()
	return nil
}
