package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// logWatch is the worker's slog handler: it counts the gateway's Warn lines
// by message and turns the fail_open gates' outage lines into intervals.
// Safe for concurrent use.
type logWatch struct {
	worker  int
	verbose bool

	mu       sync.Mutex
	warnings map[string]int64
	down     map[string]int       // gate kind → gates in an outage (one per scope)
	since    map[string]time.Time // gate kind → start of the first of them
	outages  []Interval
}

func newLogWatch(worker int, verbose bool) *logWatch {
	return &logWatch{worker: worker, verbose: verbose, warnings: map[string]int64{},
		down: map[string]int{}, since: map[string]time.Time{}}
}

func (l *logWatch) logger() *slog.Logger { return slog.New(logHandler{l}) }

// The fail_open gates' outage lines (gate/redis.Failover and QuotaFailover,
// one of each per scope): "… unreachable, breaker gate serving …", "…
// reachable again, quota gate back on redis".
const (
	outageStart = "pgw: redis unreachable,"
	outageEnd   = "pgw: redis reachable again"
)

func (l *logWatch) record(r slog.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind := "quota"
	if strings.Contains(r.Message, "breaker gate") {
		kind = "breaker"
	}
	switch {
	case strings.HasPrefix(r.Message, outageStart):
		if l.down[kind] == 0 {
			l.since[kind] = r.Time
		}
		l.down[kind]++
	case strings.HasPrefix(r.Message, outageEnd) && l.down[kind] > 0:
		if l.down[kind]--; l.down[kind] == 0 {
			l.outages = append(l.outages, Interval{Worker: l.worker, Scope: kind, Start: l.since[kind].UnixNano(), End: r.Time.UnixNano()})
		}
	}
	if r.Level >= slog.LevelWarn {
		l.warnings[r.Message]++
		if l.verbose {
			var b strings.Builder
			r.Attrs(func(a slog.Attr) bool {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
				return true
			})
			fmt.Fprintf(os.Stderr, "worker %d %s %s%s\n", l.worker, r.Time.Format("15:04:05.000"), r.Message, b.String())
		}
	}
}

// outagesAndWarnings returns the outages (one still open ends now) and the
// warning counts.
func (l *logWatch) outagesAndWarnings() ([]Interval, map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]Interval(nil), l.outages...)
	now := time.Now().UnixNano()
	for kind, n := range l.down {
		if n > 0 {
			out = append(out, Interval{Worker: l.worker, Scope: kind, Start: l.since[kind].UnixNano(), End: now})
		}
	}
	w := make(map[string]int64, len(l.warnings))
	for k, v := range l.warnings {
		w[k] = v
	}
	return out, w
}

type logHandler struct{ l *logWatch }

func (h logHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.record(r)
	return nil
}

func (h logHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logHandler) WithGroup(string) slog.Handler      { return h }

// lostHook counts gate scripts whose reply was lost: sent (or maybe sent) to
// Redis, answered by a network error or a read timeout instead of a reply.
// Such a script may or may not have run. It also counts the give-backs
// (Release, Record, a conclusion) that never left — a failed dial, no
// connection from the pool — since the lease they would have freed stays
// too: under fail_open the failover gates report such a give-back as done
// (Redis is down; the lease expires by itself), so nothing else counts it.
// Safe for concurrent use.
type lostHook struct {
	acquire, release, tryEnter, record, other atomic.Int64
}

var _ goredis.Hook = (*lostHook)(nil)

func (h *lostHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *lostHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if lost := replyLost(err); lost || neverSent(err) {
			h.count(cmd.Args(), lost)
		}
		return err
	}
}

func (h *lostHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if lost := replyLost(c.Err()); lost || neverSent(c.Err()) {
				h.count(c.Args(), lost) // the writer's conclusions, RetryAfter's reads
			}
		}
		return err
	}
}

// count sorts a lost script by its keys and arguments (EVALSHA sha numkeys
// keys… args…): an Acquire names the quota bucket and the in-flight set, a
// Release the in-flight set alone; a breaker script with the policy's 3
// arguments is a TryEnter (or a Snapshot, which workers do not call), with
// 4 a TryEnter carrying its nonce, with 7 (the policy, outcome and the
// decision's three) a Record, and one with the nonce alone the release of
// a probe lease whose grant's reply was lost (probe_forget.lua).
//
// sent is false for a command that never left: only a give-back counts
// then (an Acquire or TryEnter that never ran took nothing).
func (h *lostHook) count(args []any, sent bool) {
	name, _ := args[0].(string)
	if len(args) < 4 || !strings.HasPrefix(strings.ToLower(name), "eval") {
		if sent {
			h.other.Add(1)
		}
		return
	}
	n := 0
	switch v := args[2].(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	}
	keys := make([]string, 0, 5)
	for i := 0; i < n && 3+i < len(args); i++ {
		k, _ := args[3+i].(string)
		keys = append(keys, k)
	}
	rest := len(args) - 3 - n
	switch {
	case !sent && !giveBack(keys, rest):
		// Never ran, and it would have taken, not freed: nothing is left.
	case len(keys) == 2 && strings.HasSuffix(keys[0], "}:quota") && strings.HasSuffix(keys[1], "}:inflight"):
		h.acquire.Add(1)
	case len(keys) == 1 && strings.HasSuffix(keys[0], "}:inflight"):
		h.release.Add(1)
	case len(keys) == 2 && strings.HasSuffix(keys[0], "}:cb") && (rest == policyArgs || rest == policyArgs+1):
		h.tryEnter.Add(1)
	case len(keys) == 2 && strings.HasSuffix(keys[0], "}:cb") && rest == 1:
		h.record.Add(1)
	case len(keys) == 2 && strings.HasSuffix(keys[0], "}:cb") && rest == policyArgs+4:
		h.record.Add(1)
	case (len(keys) == 4 || len(keys) == 5) && strings.HasSuffix(keys[0], "}:cb") && (rest == admitArgs || rest == admitArgs+1):
		// An admission (with the advertised budget's key as a fifth when
		// it took the budget too): a probe lease and an in-flight lease it
		// may hold.
		h.tryEnter.Add(1)
		h.acquire.Add(1)
	case len(keys) == 4 && strings.HasSuffix(keys[0], "}:cb") && rest == concludeArgs:
		// A conclusion: a probe lease and an in-flight lease it may not
		// have freed.
		h.record.Add(1)
		h.release.Add(1)
	default:
		h.other.Add(1)
	}
}

// giveBack reports whether a gate script of these keys and this many
// arguments frees a lease: a Release, a Record or a conclusion.
func giveBack(keys []string, rest int) bool {
	switch {
	case len(keys) == 1 && strings.HasSuffix(keys[0], "}:inflight"):
		return true
	case len(keys) == 2 && strings.HasSuffix(keys[0], "}:cb") && (rest == policyArgs+4 || rest == 1):
		return true
	case len(keys) == 4 && strings.HasSuffix(keys[0], "}:cb") && rest == concludeArgs:
		return true
	}
	return false
}

// The argument counts of the breaker scripts (gate/redis lua/common.lua):
// the policy's 3 (key TTL, window width, the rest in one), then for the
// combined scripts (admit.go and conclude.go) the admission's 10 (rates,
// MaxInFlight, lease, estimate, permit ID; and the request's nonce as an
// 11th under a ctx that can end) or the conclusion's 9 (outcome, decision's
// 3, TPM rate's 3, correction, permit ID).
const (
	policyArgs   = 3
	admitArgs    = policyArgs + 10
	concludeArgs = policyArgs + 9
)

func (h *lostHook) counts() LostReplies {
	return LostReplies{Acquire: h.acquire.Load(), Release: h.release.Load(), TryEnter: h.tryEnter.Load(),
		Record: h.record.Load(), Other: h.other.Load()}
}

// neverSent reports whether err says the command never reached Redis: a
// failed dial, no connection from the pool, a closed client.
func neverSent(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) {
		return false
	}
	if errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// replyLost reports whether err may hide a command that ran: not a reply
// (nil, a missing key, a server error), not a command that never left (a
// failed dial, no connection from the pool, a closed client).
func replyLost(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) || errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout) {
		return false
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return true
}

// settleGoroutines waits up to limit for the goroutines of pgw, go-redis and
// net/http's connection pool to end (closed connections take a moment to
// retire theirs), and returns how many are left with their stacks. The
// worker's own goroutines (this package) are not counted.
func settleGoroutines(limit time.Duration) (int, string) {
	deadline := time.Now().Add(limit)
	for {
		n, stacks := leftoverGoroutines()
		if n == 0 || time.Now().After(deadline) {
			return n, stacks
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond) // foreign goroutines offer nothing to wait on
	}
}

func leftoverGoroutines() (int, string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		frames := framesOf(g)
		if strings.Contains(frames, "/internal/faultsuite.") {
			continue
		}
		if strings.Contains(frames, "github.com/pgw-go/pgw") || strings.Contains(frames, "github.com/redis/go-redis") ||
			strings.Contains(frames, "net/http.(*persistConn)") {
			n++
			if out.Len() < 8000 {
				out.WriteString(g)
				out.WriteString("\n\n")
			}
		}
	}
	return n, out.String()
}

// framesOf drops the "created by" lines of a goroutine's stack: who started
// a goroutine says nothing about what it runs now.
func framesOf(g string) string {
	lines := strings.Split(g, "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "created by ") {
			i++ // and its file:line
			continue
		}
		b.WriteString(lines[i])
		b.WriteByte('\n')
	}
	return b.String()
}
