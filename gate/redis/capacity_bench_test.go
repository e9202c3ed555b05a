package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// BenchmarkScriptCapacity is what one redis-server can govern for one
// source when it, not its clients, is the limit: the admission and the
// conclusion scripts of real governed calls (breaker, RPM, TPM and
// MAX_IN_FLIGHT), sent in pipelines of capacityBatch admissions and then
// their conclusions by capacityClients goroutines, so that the client's own
// cost per call is a small part of the server's. It reports
//
//   - calls/s: admissions concluded per second;
//   - serverµs/call: both scripts' time, from INFO commandstats;
//   - cpuµs/call: the server's main thread CPU (INFO cpu) per call, its
//     reading and answering of the commands included;
//   - busy: that CPU over the elapsed time — near 1 when the server is
//     the limit, so that calls/s is its capacity for one source.
//
// A governed call's own benchmarks (bench/, RedisGovernedSaturation) run
// the whole Go path per call and, on a small machine, saturate the client
// first.
func BenchmarkScriptCapacity(b *testing.B) {
	srv := testutil.StartRedis(b)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, PoolSize: 2 * capacityClients})
	b.Cleanup(func() { _ = c.Close() })
	rb, err := NewBreaker(c, "bench", gate.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	rq, err := NewQuota(c, "bench", map[string]gate.Limits{"s": {RPM: 1 << 26, TPM: 1 << 28, MaxInFlight: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if err := rq.Preload(ctx); err != nil {
		b.Fatal(err)
	}
	// One call through the gates' own path loads both scripts.
	d, p, qd, _, err := rq.Admit(ctx, rb, "s", 10)
	if err != nil || !qd.Allowed {
		b.Fatalf("admit: %v %+v", err, qd)
	}
	warm := []gate.Conclusion{{Source: "s", Decision: d, Outcome: gate.Success, Permit: p, HasPermit: true, Tokens: -1}}
	if !rq.Conclude(ctx, rb, warm) || warm[0].Err != nil {
		b.Fatalf("conclude: %v", warm[0].Err)
	}
	round := func() error { return capacityRound(ctx, c, rq, rb) }
	if err := round(); err != nil { // warm: connections, the keys' encodings
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, c)
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	rounds := (b.N + capacityBatch*capacityClients - 1) / (capacityBatch * capacityClients)
	var left atomic.Int64
	left.Store(int64(rounds * capacityClients))
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range capacityClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := round(); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	calls := float64(rounds * capacityClients * capacityBatch)
	cpu := serverCPU(b, c) - cpu0
	b.ReportMetric(calls/elapsed.Seconds(), "calls/s")
	b.ReportMetric(scriptUsec(b, c)/calls, "serverµs/call")
	b.ReportMetric(cpu.Seconds()*1e6/calls, "cpuµs/call")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "busy")
}

const (
	capacityClients = 4
	capacityBatch   = 64
)

// capacityRound admits capacityBatch calls in one pipeline, then concludes
// them (Success, the estimate standing) in another.
func capacityRound(ctx context.Context, c *goredis.Client, q *Quota, rb *Breaker) error {
	s := q.sources["s"]
	head := s.admitHead(q, rb, false)
	cmds := make([]*goredis.Cmd, capacityBatch)
	ids := make([]string, capacityBatch)
	pipe := c.Pipeline()
	for i := range cmds {
		ids[i] = newPermitID()
		args := make([]any, len(head), len(head)+2)
		copy(args, head)
		cmds[i] = goredis.NewCmd(ctx, append(args, int64(10), ids[i])...)
		_ = pipe.Process(ctx, once{cmds[i]})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	cs := make([]gate.Conclusion, capacityBatch)
	var v [10]int64
	for i, cmd := range cmds {
		if err := ints(cmd, v[:]); err != nil {
			return err
		}
		if v[0] != 1 || v[7] != 1 {
			return fmt.Errorf("an admission was refused: %v", v)
		}
		cs[i] = gate.Conclusion{
			Source:   "s",
			Decision: gate.Decision{Allowed: true, State: gate.Closed, Token: uint64(v[4]), Generation: uint64(v[5])},
			Outcome:  gate.Success, Permit: gate.Permit{Source: "s", ID: ids[i], Tokens: 10}, HasPermit: true, Tokens: -1,
		}
	}
	if !q.Conclude(ctx, rb, cs) {
		return errors.New("the breaker does not combine")
	}
	for i := range cs {
		if cs[i].Err != nil {
			return cs[i].Err
		}
	}
	return nil
}

// serverCPU is the CPU the server's main thread has used (INFO cpu).
func serverCPU(b *testing.B, c *goredis.Client) time.Duration {
	b.Helper()
	var sec float64
	for _, f := range []string{"used_cpu_user_main_thread", "used_cpu_sys_main_thread"} {
		v, ok := infoField(b, c, "cpu", f)
		if !ok {
			b.Skipf("redis-server reports no %s", f)
		}
		sec += v
	}
	return time.Duration(sec * float64(time.Second))
}

// scriptUsec is the usec INFO commandstats gives EVALSHA and EVAL.
func scriptUsec(b *testing.B, c *goredis.Client) float64 {
	b.Helper()
	var usec float64
	for _, name := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		line, ok := infoLine(b, c, "commandstats", name)
		if !ok {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			if k, v, _ := strings.Cut(f, "="); k == "usec" {
				x, _ := strconv.ParseFloat(v, 64)
				usec += x
			}
		}
	}
	return usec
}

// infoField is the number a section of INFO gives field.
func infoField(b *testing.B, c *goredis.Client, section, field string) (float64, bool) {
	b.Helper()
	v, ok := infoLine(b, c, section, field)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil
}

// infoLine is what a section of INFO gives after "name:".
func infoLine(b *testing.B, c *goredis.Client, section, name string) (string, bool) {
	b.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}
