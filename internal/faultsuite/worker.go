package faultsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/openai"
)

// MaybeRunWorker turns the process into a worker when Launch started it
// (WorkerEnv is set): it runs the worker and exits. Otherwise it returns at
// once. Call it first thing in main or TestMain.
func MaybeRunWorker() {
	spec, ok, err := specFromEnv()
	if !ok {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	id, _ := strconv.Atoi(os.Getenv(workerIDEnv))
	goredis.SetLogger(quietRedis{}) // dial failures during outages would flood stderr
	os.Exit(runWorker(id, spec, os.Stdin, os.Stdout))
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// The messages a worker writes to its stdout, one JSON object a line.
type message struct {
	Ready    bool    `json:"ready,omitempty"`
	Stopped  bool    `json:"stopped,omitempty"`
	Capacity *int    `json:"capacity,omitempty"`
	Report   *Report `json:"report,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// The commands a worker reads from its stdin, one a line. End of input
// means stop, then close.
const (
	cmdStop     = "stop"     // stop making calls; wait for the running ones; answer "stopped"
	cmdCapacity = "capacity" // "capacity N": hold N Calls of ScopeTool at once
	cmdClose    = "close"    // Close the gateway, report, exit
	cmdPhase    = "phase"    // "phase NAME": count the calls that end from now on in NAME
)

type worker struct {
	id     int
	spec   Spec
	gw     *pgw.GatewayClient
	oc     *openai.Client
	rc     *goredis.Client // own client (Spec.OwnRedis), else nil
	watch  *scopeWatch
	pauses *pauseWatch
	logs   *logWatch
	lost   *lostHook
	window time.Duration
	bound  time.Duration

	mu     sync.Mutex
	report Report
	phase  *Phase
	probes []Interval
}

func runWorker(id int, spec Spec, in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	fail := func(err error) int {
		_ = enc.Encode(message{Error: err.Error()})
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := &worker{id: id, spec: spec, window: spec.Window, bound: spec.Bound, report: Report{
		Workers: 1, Results: map[string]int64{}, Ops: map[string]int64{}, Phases: map[string]*Phase{},
	}}
	w.setPhase("")
	if w.bound <= 0 {
		w.bound = time.Duration(1<<63 - 1)
	}
	if w.window <= 0 || w.window > w.bound {
		w.window = w.bound
	}
	s, err := config.FromMap(spec.Env)
	if err != nil {
		return fail(err)
	}
	w.logs = newLogWatch(id, spec.Verbose)
	w.watch = newScopeWatch(spec.RetryAfterGrace, w.bound, w.violation)
	w.oc = openai.New()
	opts := []pgw.Option{
		pgw.WithLogger(w.logs.logger()),
		pgw.WithObserver(observe.Funcs{Attempt: w.observeAttempt}),
		pgw.WithChatTransport(meteredChat{tr: w.oc, watch: w.watch}),
		pgw.WithEmbedTransport(meteredEmbed{tr: w.oc, watch: w.watch, scope: ScopeEmbed}),
	}
	if spec.OwnRedis {
		w.rc = goredis.NewClient(&goredis.Options{Addr: spec.RedisAddr, MaxRetries: -1, ReadTimeout: spec.RedisReadTimeout})
		w.lost = &lostHook{}
		w.rc.AddHook(w.lost)
		opts = append(opts, pgw.WithRedisClient(w.rc))
	}
	startCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	w.gw, err = pgw.New(startCtx, *s, opts...)
	cancel()
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(message{Ready: true}); err != nil {
		return fail(err)
	}

	w.pauses = newPauseWatch(pauseTick)
	stop := make(chan struct{})
	var load sync.WaitGroup
	for g := range spec.Goroutines {
		load.Add(1)
		go func() {
			defer load.Done()
			w.loop(stop, rand.New(rand.NewPCG(uint64(id), uint64(g)))) //nolint:gosec // load shape, not security
		}()
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			load.Wait()
			w.settleWriter()
		}
	}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(lines.Text()), " ")
		switch cmd {
		case cmdStop:
			stopLoad()
			if err := enc.Encode(message{Stopped: true}); err != nil {
				return fail(err)
			}
		case cmdPhase:
			w.setPhase(arg)
		case cmdCapacity:
			stopLoad()
			n, _ := strconv.Atoi(arg)
			got := w.capacity(n)
			if err := enc.Encode(message{Capacity: &got}); err != nil {
				return fail(err)
			}
		case cmdClose:
			stopLoad()
			return w.finish(enc)
		}
	}
	stopLoad()
	return w.finish(enc)
}

// settleWriter waits, once the load has stopped, until the gateway's
// outcome writer has given back every outcome handed to it (written, failed
// or dropped), for at most a write timeout and a second: the writer is
// asynchronous, and the leases the harness inspects next are given back
// by it. An outcome still unwritten then is left for the inspection to
// find.
func (w *worker) settleWriter() {
	deadline := time.Now().Add(admission.DefaultWriterTimeout + time.Second)
	for w.gw.OutcomeWriterStats().Unwritten > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// finish closes the gateway, looks for leftover goroutines and reports.
func (w *worker) finish(enc *json.Encoder) int {
	began := time.Now()
	closeErr := w.gw.Close()
	took := time.Since(began)
	w.oc.CloseIdleConnections()
	if w.rc != nil {
		_ = w.rc.Close()
	}
	if w.pauses != nil {
		w.pauses.close()
	}
	n, stacks := settleGoroutines(2 * time.Second)
	w.mu.Lock()
	r := w.report
	if w.pauses != nil {
		r.MaxPause = w.pauses.longest()
	}
	r.Probes = w.probes
	w.mu.Unlock()
	if closeErr != nil {
		r.violation("worker %d: Close: %v", w.id, closeErr)
	}
	r.Close = took
	if w.spec.CloseBound > 0 && took > w.spec.CloseBound {
		r.violation("worker %d: Close took %v (bound %v)", w.id, took.Round(time.Millisecond), w.spec.CloseBound)
	}
	r.Goroutines, r.Stacks = n, stacks
	if n > 0 {
		r.violation("worker %d: %d goroutines of pgw, go-redis or net/http left after Close", w.id, n)
	}
	r.Outages, r.Warnings = w.logs.outagesAndWarnings()
	ws := w.gw.OutcomeWriterStats()
	r.WriterFailed, r.WriterDropped = int64(ws.Failed), int64(ws.Dropped)
	if w.lost != nil {
		r.Lost = w.lost.counts()
		// An outcome the writer could not write (Redis down, its write
		// timed out, the queue full) leaves its lease to expire, like a
		// Release whose reply was lost.
		r.Lost.Release += int64(ws.Failed + ws.Dropped)
	}
	if err := enc.Encode(message{Report: &r}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

func (w *worker) setPhase(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.report.Phases[name]
	if p == nil {
		p = &Phase{Results: map[string]int64{}}
		w.report.Phases[name] = p
	}
	w.phase = p
}

func (w *worker) violation(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.report.violation("worker %d: "+format, append([]any{w.id}, args...)...)
}

func (w *worker) observeAttempt(a observe.AttemptRecord) {
	if !a.Probe {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.probes) < 100_000 {
		w.probes = append(w.probes, Interval{Worker: w.id, Scope: a.Scope, Source: a.Source,
			Start: a.Start.UnixNano(), End: a.Start.Add(a.Latency).UnixNano()})
	}
}

// loop makes calls until stop is closed.
func (w *worker) loop(stop <-chan struct{}, rng *rand.Rand) {
	ops, total := w.mix()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if w.spec.Think > 0 {
			t := time.NewTimer(time.Duration(rng.Int64N(int64(w.spec.Think))))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		n := rng.IntN(total)
		op := ""
		for _, o := range ops {
			if n < o.weight {
				op = o.name
				break
			}
			n -= o.weight
		}
		w.call(op, rng)
	}
}

type weighted struct {
	name   string
	weight int
}

func (w *worker) mix() ([]weighted, int) {
	var ops []weighted
	total := 0
	for _, name := range []string{OpChat, OpStream, OpEmbed, OpTool} {
		if wt := w.spec.Mix[name]; wt > 0 {
			ops = append(ops, weighted{name, wt})
			total += wt
		}
	}
	return ops, total
}

var (
	chatRequest  = pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}}
	embedRequest = pgw.EmbedRequest{Inputs: []string{"one", "two"}}
)

// call makes one governed call of op and checks it.
func (w *worker) call(op string, rng *rand.Rand) {
	m := &meter{}
	ctx, cancel := context.WithCancel(withMeter(context.Background(), m))
	defer cancel()
	var cancelledAt atomic.Int64
	var timer *time.Timer
	if w.spec.CancelRate > 0 && w.spec.CancelWithin > 0 && rng.Float64() < w.spec.CancelRate {
		timer = time.AfterFunc(time.Duration(rng.Int64N(int64(w.spec.CancelWithin))), func() {
			cancelledAt.Store(time.Now().UnixNano())
			cancel()
		})
	}
	scope := map[string]string{OpChat: ScopeChat, OpStream: ScopeChat, OpEmbed: ScopeEmbed, OpTool: ScopeTool}[op]
	start := time.Now()
	var err error
	var end time.Time // when the governed part returned: for a stream, ChatStream
	result := ""
	switch op {
	case OpChat:
		_, err = w.gw.Chat(ctx, chatRequest)
		end = time.Now()
	case OpEmbed:
		_, err = w.gw.Embed(ctx, embedRequest)
		end = time.Now()
	case OpTool:
		_, err = pgw.Call(ctx, w.gw, ScopeTool, w.tool)
		end = time.Now()
	case OpStream:
		var st *pgw.Stream
		st, err = w.gw.ChatStream(ctx, chatRequest)
		end = time.Now()
		if err == nil {
			result, err = w.read(st, rng)
		}
	}
	returned := time.Now()
	if timer != nil {
		timer.Stop()
	}
	cut := false
	if _, _, c := m.inAttempts(returned); c {
		cut = true
	}
	if result == "" {
		result = classify(err, cut, cancelledAt.Load() != 0)
	}
	inAttempts, attempts, _ := m.inAttempts(end)
	stall := end.Sub(start) - inAttempts

	w.mu.Lock()
	defer w.mu.Unlock()
	r := &w.report
	r.Calls++
	r.Results[result]++
	r.Ops[op+"/"+result]++
	w.phase.Calls++
	w.phase.Results[result]++
	if !w.allowed(op, result) {
		r.violation("worker %d: %s call ended %s: %v", w.id, op, result, err)
	}
	if c := cancelledAt.Load(); c != 0 && c < returned.UnixNano() {
		r.Cancelled++
		lat := returned.Sub(time.Unix(0, c))
		r.MaxCancelLatency = max(r.MaxCancelLatency, lat)
		// The bound is on the time the process could run: a span in
		// which none of its goroutines ran on time (the machine busy
		// with others) is no time the call had to see its ctx end.
		paused := w.pauses.withinSoFar(time.Unix(0, c), returned)
		if w.spec.CancelBound > 0 && lat-paused > w.spec.CancelBound {
			r.violation("worker %d: %s call returned %v after its cancellation, %v of it with the process paused (bound %v): %s %v",
				w.id, op, lat.Round(time.Millisecond), paused.Round(time.Millisecond), w.spec.CancelBound, result, err)
		}
	}
	held := func() {
		if stall > r.MaxStall {
			r.MaxStall = stall
			r.MaxStallCall = fmt.Sprintf("%s, %d attempts, %s", op, attempts, result)
		}
	}
	switch {
	case stall <= w.window:
		held()
	case w.watch.keptDelivering(scope, start, end, stall, w.bound):
		r.Excused++
		r.MaxStallExcused = max(r.MaxStallExcused, stall)
	case stall <= w.bound:
		r.Late++
		held()
	case stall-pausedOutside(w.pauses.withinSoFar(start, end), inAttempts) <= w.bound:
		// Over the bound only by time the process was not running (the
		// machine busy with others): no time the call had to end in.
		r.Late++
		held()
	default:
		held()
		r.violation("worker %d: %s call spent %v outside its attempts, %v of it with the process paused (bound %v, %d attempts, %s): %v",
			w.id, op, stall.Round(time.Millisecond), pausedOutside(w.pauses.withinSoFar(start, end), inAttempts).Round(time.Millisecond),
			w.bound, attempts, result, err)
	}
	if result == ResultSuccess && attempts == 1 && op != OpStream {
		r.Overhead.Add(stall)
		w.phase.Overhead.Add(stall)
	}
}

// read reads a stream to its end, or abandons it after its first chunk
// (Spec.AbandonRate). It returns the result when the stream decided it.
func (w *worker) read(st *pgw.Stream, rng *rand.Rand) (string, error) {
	if w.spec.AbandonRate > 0 && rng.Float64() < w.spec.AbandonRate {
		_, err := st.Recv()
		cerr := st.Close()
		if err != nil {
			return "", err
		}
		return ResultAbandoned, cerr
	}
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}

// ResultAbandoned is a stream the worker closed after its first chunk; it is
// always allowed.
const ResultAbandoned = "abandoned"

func (w *worker) allowed(op, result string) bool {
	if result == ResultAbandoned || result == ResultSuccess {
		return true
	}
	allowed := w.spec.Allowed
	if a, ok := w.spec.AllowedByOp[op]; ok {
		allowed = a
	}
	for _, a := range allowed {
		if a == result && result != ResultOther {
			return true
		}
	}
	return false
}

// tool is the attempt of a ScopeTool call: an embedding request to the
// source's upstream, through the metered transport.
func (w *worker) tool(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
	resp, err := meteredEmbed{tr: w.oc, watch: w.watch, scope: ScopeTool}.Embed(ctx, src, pgw.EmbedRequest{Inputs: []string{"tool"}})
	return len(resp.Vectors), resp.Usage, err
}

// classify sorts a call's error into a result.
func classify(err error, cut, cancelled bool) string {
	var (
		coe *pgw.CircuitOpenError
		ase *pgw.AllSourcesExhausted
		gue *pgw.GatewayUnavailableError
		he  *pgw.HTTPError
	)
	switch {
	case err == nil:
		return ResultSuccess
	case errors.Is(err, redis.ErrUnreachable):
		// First: Redis failing a call is what it is, whatever error (an
		// exhausted scope, failed attempts) carries it.
		return ResultRedisDown
	case errors.As(err, &coe):
		return ResultCircuitOpen
	case errors.As(err, &ase) && ase.Reason == pgw.ReasonStalled:
		return ResultStalled
	case errors.As(err, &ase):
		return ResultQuotaExhausted
	case errors.As(err, &gue):
		return ResultUnavailable
	case cancelled && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return ResultCanceled
	case cut:
		return ResultCut
	case errors.As(err, &he) && he.StatusCode >= 400 && he.StatusCode < 500 && he.StatusCode != 429:
		return ResultCallerError
	}
	return ResultOther
}

// capacity holds n ScopeTool calls inside their attempts at once and returns
// how many got in within 3 s: with every in-flight slot given back, all of
// the scope's MAX_IN_FLIGHT. It first makes quick calls until every source's
// breaker is Closed, so that no call waits behind a HalfOpen probe that the
// probe itself holds.
func (w *worker) capacity(n int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	quick := func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 0, pgw.Usage{}, nil }
	for ctx.Err() == nil {
		closed := true
		for _, src := range w.toolSources() {
			snap, err := w.gw.Snapshot(ctx, ScopeTool, src)
			if err != nil || snap.State != pgw.StateClosed {
				closed = false
			}
		}
		if closed {
			break
		}
		_, _ = pgw.Call(ctx, w.gw, ScopeTool, quick)
	}
	var in atomic.Int64
	all := make(chan struct{})
	release := make(chan struct{})
	var calls sync.WaitGroup
	for range n {
		calls.Add(1)
		go func() {
			defer calls.Done()
			_, _ = pgw.Call(ctx, w.gw, ScopeTool, func(actx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
				if in.Add(1) == int64(n) {
					close(all)
				}
				select {
				case <-release:
				case <-actx.Done():
				}
				return 0, pgw.Usage{}, nil
			})
		}()
	}
	select {
	case <-all:
	case <-ctx.Done():
	}
	got := int(in.Load())
	close(release)
	calls.Wait()
	return got
}

func (w *worker) toolSources() []string {
	v := w.spec.Env[ScopeTool+"__SOURCES"]
	return strings.Split(v, ",")
}

// pausedOutside is how much of a call's pauses surely fell outside its
// attempts: paused in all, of which at most inAttempts fell inside them.
func pausedOutside(paused, inAttempts time.Duration) time.Duration {
	return max(paused-inAttempts, 0)
}
