package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
	pgwredis "github.com/pgw-go/pgw/gate/redis"
)

// The distributed comparison: callers that share one breaker
// through Redis, each doing a 1 ms simulated upstream call.
//
//   - pgw: package breaker's Execute on the Redis breaker gate: TryEnter →
//     call → Record, one Lua script per step and nothing held during the
//     call;
//   - gobreaker: gobreaker v2's DistributedCircuitBreaker on GobreakerStore,
//     which takes a Redis lock around the whole call, retried on redsync's
//     schedule (32 tries, 50–250 ms apart);
//   - gobreaker-1ms-retry: the same with the lock retried every 1 ms for up
//     to 5 s, a more eager schedule than redsync's.
//
// Every simulated process gets its own GobreakerStore and breaker (a store
// remembers the token of the lock it holds); all share one go-redis client.
const (
	distributedCallers = 32
	upstreamLatency    = time.Millisecond
)

func BenchmarkDistributed(b *testing.B) {
	client := startRedis(b)
	counter := &cmdCounter{}
	client.AddHook(counter)
	b.Log("NOTE: gobreaker's v2/redis SharedDataStore is not served by the Go module proxy; " +
		"bench/gobreakerstore.go implements it the same way (SET NX PX lock with redsync's retry schedule, GET/SET of the JSON state)")

	b.Run("pgw", func(b *testing.B) {
		ctx := context.Background()
		g, err := pgwredis.NewBreaker(client, "bench", gate.Policy{}, pgwredis.WithPrefix(fmt.Sprintf("pgw-%d", b.N)))
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Preload(ctx); err != nil {
			b.Fatal(err)
		}
		// One breaker per simulated process, all on the same Redis record.
		breakers := make([]*breaker.Breaker, distributedCallers)
		for i := range breakers {
			if breakers[i], err = breaker.New(source, breaker.Config{Gate: g, Logger: discardLogger}); err != nil {
				b.Fatal(err)
			}
		}
		var failed atomic.Int64
		fn := func(context.Context) error {
			time.Sleep(upstreamLatency)
			return nil
		}
		runCallers(b, counter, func(i int) func() {
			cb := breakers[i]
			return func() {
				if err := cb.Execute(ctx, fn); err != nil {
					failed.Add(1)
				}
			}
		})
		b.ReportMetric(float64(failed.Load())/float64(b.N), "errors/call")
	})

	for _, v := range []struct {
		name               string
		minDelay, maxDelay time.Duration
	}{
		{"gobreaker", 50 * time.Millisecond, 250 * time.Millisecond},
		{"gobreaker-1ms-retry", time.Millisecond, time.Millisecond},
	} {
		b.Run(v.name, func(b *testing.B) {
			name := fmt.Sprintf("%s-%d", v.name, b.N)
			breakers := make([]*gobreaker.DistributedCircuitBreaker[any], distributedCallers)
			for i := range breakers {
				store := NewGobreakerStore(client)
				store.MinDelay, store.MaxDelay = v.minDelay, v.maxDelay
				// Keep trying for about the lock's expiry: giving up sooner
				// sends gobreaker into its own 500 ms back-off.
				store.Tries = max(store.Tries, int(store.Expiry/v.maxDelay))
				dcb, err := gobreaker.NewDistributedCircuitBreaker[any](store, gobreaker.Settings{Name: name})
				if err != nil {
					b.Fatal(err)
				}
				breakers[i] = dcb
			}
			var failed atomic.Int64
			fn := func() (any, error) {
				time.Sleep(upstreamLatency)
				return nil, nil
			}
			runCallers(b, counter, func(i int) func() {
				dcb := breakers[i]
				return func() {
					if _, err := dcb.Execute(fn); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(failed.Load())/float64(b.N), "errors/call")
			// gobreaker reads the shared state before taking the lock and
			// writes it back after the call, so concurrent instances
			// overwrite each other's counts: counted/call < 1 shows the
			// lost updates.
			if requests, err := sharedRequests(client, "gobreaker:state:"+name); err == nil {
				b.ReportMetric(float64(requests)/float64(b.N), "counted/call")
			}
		})
	}
}

// runCallers runs b.N calls spread over distributedCallers goroutines; caller
// i makes its calls with newCall(i). It reports calls/s and the Redis
// commands per call.
func runCallers(b *testing.B, counter *cmdCounter, newCall func(i int) func()) {
	b.Helper()
	b.SetParallelism((distributedCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var next atomic.Int64
	counter.n.Store(0)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		call := newCall(int(next.Add(1)-1) % distributedCallers)
		for pb.Next() {
			call()
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(counter.n.Load())/float64(b.N), "redis-cmds/call")
}

func sharedRequests(c *goredis.Client, key string) (uint32, error) {
	raw, err := c.Get(context.Background(), key).Bytes()
	if err != nil {
		return 0, err
	}
	var s gobreaker.SharedState
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, err
	}
	if s.State != gobreaker.StateClosed {
		return 0, errors.New("gobreaker state is not closed")
	}
	return s.Counts.Requests, nil
}
