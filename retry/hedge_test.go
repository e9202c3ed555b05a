package retry_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// manualTimer is a HedgeTimer fired by hand: armed holds each timer armed,
// in order.
type manualTimer struct {
	armed chan armedTimer
}

type armedTimer struct {
	d time.Duration
	c chan time.Time
}

func newManualTimer() *manualTimer { return &manualTimer{armed: make(chan armedTimer, 16)} }

func (m *manualTimer) timer(d time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	m.armed <- armedTimer{d, ch}
	return ch, func() bool { return true }
}

// fire waits for the next timer a race arms and fires it.
func (m *manualTimer) fire(t *testing.T) time.Duration {
	t.Helper()
	select {
	case a := <-m.armed:
		a.c <- time.Now()
		return a.d
	case <-time.After(5 * time.Second):
		t.Fatal("the hedge timer was never armed")
		return 0
	}
}

// settleLog records the tokens every permit was settled to.
type settleLog struct {
	gate.QuotaGate
	mu      sync.Mutex
	settled map[string][]int64
}

func (q *settleLog) Settle(ctx context.Context, p gate.Permit, n int64) error {
	q.mu.Lock()
	q.settled[p.Source] = append(q.settled[p.Source], n)
	q.mu.Unlock()
	return q.QuotaGate.Settle(ctx, p, n)
}

func (q *settleLog) of(source string) []int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int64(nil), q.settled[source]...)
}

// streamInBackground starts a chat stream on e's loop through tr, the
// way a caller would, and hands the stream over once it opens.
func streamInBackground(t *testing.T, e *hedgeEnv, tr *gatedChat) <-chan *retry.Stream {
	t.Helper()
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	done := make(chan *retry.Stream, 1)
	go func() {
		s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		assert.NoError(t, err)
		done <- s
	}()
	return done
}

// gatedChat answers a source's first chunk only when its gate is closed;
// until then its Recv waits (for its ctx too, unless deaf).
type gatedChat struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	deaf    map[string]bool // ignore ctx while gated
	fail    map[string]error
	streams map[string]*gatedStream
	opened  chan string
}

func newGatedChat(sources ...string) *gatedChat {
	g := &gatedChat{gates: map[string]chan struct{}{}, deaf: map[string]bool{}, fail: map[string]error{},
		streams: map[string]*gatedStream{}, opened: make(chan string, 16)}
	for _, s := range sources {
		g.gates[s] = make(chan struct{})
	}
	return g
}

func (g *gatedChat) release(source string) { close(g.gates[source]) }

func (g *gatedChat) ChatStream(ctx context.Context, src transport.Source, _ transport.ChatRequest) (transport.ChatStream, error) {
	g.mu.Lock()
	s := &gatedStream{ctx: ctx, name: src.Name, gate: g.gates[src.Name], deaf: g.deaf[src.Name], fail: g.fail[src.Name]}
	g.streams[src.Name] = s
	g.mu.Unlock()
	g.opened <- src.Name
	return s, nil
}

func (g *gatedChat) stream(source string) *gatedStream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.streams[source]
}

type gatedStream struct {
	ctx    context.Context
	name   string
	gate   chan struct{}
	deaf   bool
	fail   error
	n      int
	closed atomic.Bool
	sent   atomic.Int32
}

func (s *gatedStream) Recv() (transport.ChatChunk, error) {
	if s.n == 0 {
		if s.deaf {
			<-s.gate
		} else {
			select {
			case <-s.gate:
			case <-s.ctx.Done():
				return transport.ChatChunk{}, s.ctx.Err()
			}
		}
		if s.fail != nil {
			return transport.ChatChunk{}, s.fail
		}
	}
	s.n++
	switch s.n {
	case 1, 2:
		s.sent.Add(1)
		return transport.ChatChunk{Delta: s.name + " "}, nil
	case 3:
		return transport.ChatChunk{Usage: &transport.Usage{TotalTokens: 11}}, nil
	}
	return transport.ChatChunk{}, io.EOF
}

func (s *gatedStream) Close() error { s.closed.Store(true); return nil }

type hedgeEnv struct {
	clk     *testutil.FakeClock
	breaker *memory.Breaker
	quota   *memory.Quota
	settles *settleLog
	pacer   *fakePacer
	timer   *manualTimer
	loop    *retry.Loop
	mu      sync.Mutex
	events  []observe.Hedge
	records []observe.AttemptRecord
	panicOn atomic.Value // string: the hedge event the observer panics on, once
	// panicRecord: the attempt outcome the observer panics on, once;
	// panicState: it panics on the next state change.
	panicRecord atomic.Value
	panicState  atomic.Bool
	log         lockedLog // what the loop logs
}

// lockedLog is a log's text, safe for concurrent use.
type lockedLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func newHedgeEnv(t *testing.T, scope func(*config.ScopeSettings)) *hedgeEnv {
	t.Helper()
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, ProbeTTL: 10 * cooldown},
		memory.WithClock(clk))
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{
		"s1": {MaxInFlight: 8, TPM: 1_000_000}, "s2": {MaxInFlight: 8, TPM: 1_000_000},
		"s3": {MaxInFlight: 8, TPM: 1_000_000},
	}, memory.WithClock(clk))
	require.NoError(t, err)
	e := &hedgeEnv{clk: clk, breaker: b, quota: q, settles: &settleLog{QuotaGate: q, settled: map[string][]int64{}},
		pacer: &fakePacer{held: map[string]int{}, throttled: map[string]int{}}, timer: newManualTimer()}
	sc := config.ScopeSettings{Name: "CHAT", PollInterval: poll, StallWindow: window, HedgeAfter: time.Second,
		Sources: []config.Source{{Name: "s1", Timeout: 10 * time.Second}, {Name: "s2", Timeout: 10 * time.Second}}}
	if scope != nil {
		scope(&sc)
	}
	sleeper := &fakeSleep{clk: clk}
	e.loop, err = retry.New(retry.Config{
		Scope: sc, Breaker: b, Quota: e.settles, Pacer: e.pacer, Clock: clk, Sleep: sleeper.sleep,
		Rand: func() float64 { return 0 }, Logger: slog.New(slog.NewTextHandler(&e.log, nil)), HedgeTimer: e.timer.timer,
		Observer: observe.Funcs{
			Hedge: func(h observe.Hedge) {
				if ev, _ := e.panicOn.Load().(string); ev != "" && ev == h.Event && e.panicOn.CompareAndSwap(ev, "") {
					panic("observer bug")
				}
				e.mu.Lock()
				e.events = append(e.events, h)
				e.mu.Unlock()
			},
			Attempt: func(r observe.AttemptRecord) {
				if o, _ := e.panicRecord.Load().(string); o != "" && o == r.Outcome && e.panicRecord.CompareAndSwap(o, "") {
					panic("observer bug, key sk-secret-1")
				}
				e.mu.Lock()
				e.records = append(e.records, r)
				e.mu.Unlock()
			},
			StateChange: func(observe.StateChange) {
				if e.panicState.CompareAndSwap(true, false) {
					panic("observer bug, key sk-secret-1")
				}
			},
		},
	})
	require.NoError(t, err)
	return e
}

func (e *hedgeEnv) hedgeEvents() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, h := range e.events {
		out = append(out, h.Event+":"+h.Source+"<"+h.Primary)
	}
	return out
}

func (e *hedgeEnv) outcomes() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for _, r := range e.records {
		out[r.Source] = r.Outcome
	}
	return out
}

// requireGivenBack waits for every source's admission to be back: no permit
// or pacer slot held, no probe lease, no attempt in flight, and the breaker
// never told of a failure.
func (e *hedgeEnv) requireGivenBack(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range []string{"s1", "s2"} {
			snap, err := e.breaker.Snapshot(context.Background(), s)
			if err != nil || e.quota.InFlight(s) != 0 || e.pacer.get(e.pacer.held, s) != 0 ||
				snap.ProbesInFlight != 0 || e.loop.Admission().Latency().InFlight(s) != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
	for _, s := range []string{"s1", "s2"} {
		snap, err := e.breaker.Snapshot(context.Background(), s)
		require.NoError(t, err)
		assert.Zero(t, snap.ConsecutiveFailures, "a lost race is no failure of %s", s)
	}
}

func drain(t *testing.T, s *retry.Stream) string {
	t.Helper()
	var b []byte
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return string(b)
		}
		require.NoError(t, err)
		b = append(b, ch.Delta...)
	}
}

func TestHedgeStreamTheHedgeWinsAndTheSlowAttemptIsGivenBack(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	done := hedgedStream(t, chat, tr, func() {
		assert.Equal(t, time.Second, e.timer.fire(t), "HEDGE_AFTER_S is the delay")
	})
	tr.release("s2")
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "s2", r.s.Source())
	assert.Equal(t, "s2 s2 ", drain(t, r.s))
	require.NoError(t, r.s.Close())

	e.requireGivenBack(t)
	assert.True(t, tr.stream("s1").closed.Load(), "the loser's stream is closed")
	assert.Zero(t, tr.stream("s1").sent.Load(), "nothing of the loser was produced or delivered")
	assert.Equal(t, []int64{0}, e.settles.of("s1"), "the loser's reservation is refunded in full")
	assert.Equal(t, []int64{11}, e.settles.of("s2"), "the winner is settled to its usage")
	assert.Equal(t, []string{"fired:s2<s1", "won:s2<s1"}, e.hedgeEvents())
	assert.Equal(t, map[string]string{"s1": observe.OutcomeHedgeLost, "s2": observe.OutcomeSuccess}, e.outcomes())
	assert.Equal(t, gate.Closed, snapshotState(t, e, "s1"))
}

func snapshotState(t *testing.T, e *hedgeEnv, s string) gate.State {
	snap, err := e.breaker.Snapshot(context.Background(), s)
	require.NoError(t, err)
	return snap.State
}

func TestHedgeStreamThePrimaryWinsAndTheHedgeIsWasted(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	done := streamInBackground(t, e, tr)
	<-tr.opened
	e.timer.fire(t)
	<-tr.opened
	tr.release("s1")
	s := <-done
	assert.Equal(t, "s1 s1 ", drain(t, s))
	require.NoError(t, s.Close())
	e.requireGivenBack(t)
	assert.True(t, tr.stream("s2").closed.Load())
	assert.Equal(t, []int64{0}, e.settles.of("s2"))
	assert.Equal(t, []string{"fired:s2<s1", "wasted:s2<s1"}, e.hedgeEvents())
}

// A loser that ignores its cancellation and delivers a first chunk after the
// race was decided: its stream is discarded, nothing of it reaches the
// caller, and its admission still goes back.
func TestHedgeALateLoserStreamIsDiscarded(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	tr.deaf["s2"] = true
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	base := runtime.NumGoroutine()
	done := make(chan *retry.Stream, 1)
	go func() {
		s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		assert.NoError(t, err)
		done <- s
	}()
	<-tr.opened
	e.timer.fire(t)
	<-tr.opened
	tr.release("s1")
	s := <-done
	assert.Equal(t, int64(1), e.loop.Admission().Latency().InFlight("s2"), "the deaf loser still runs")
	tr.release("s2") // it answers now, too late
	assert.Equal(t, "s1 s1 ", drain(t, s))
	require.NoError(t, s.Close())
	e.requireGivenBack(t)
	assert.True(t, tr.stream("s2").closed.Load(), "the late stream was closed")
	assert.Equal(t, int32(1), tr.stream("s2").sent.Load(), "it read one chunk, which went nowhere")
	assert.Equal(t, []int64{0}, e.settles.of("s2"))
	assert.Equal(t, observe.OutcomeHedgeLost, e.outcomes()["s2"])
	// Polled by hand: Eventually's own goroutine would be counted.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "no goroutine of the race outlives it")
}

// The hedge holds a HalfOpen probe lease: losing frees it without a verdict.
func TestHedgeALostProbeFreesItsLease(t *testing.T) {
	e := newHedgeEnv(t, nil)
	d, err := e.breaker.TryEnter(context.Background(), "s2")
	require.NoError(t, err)
	_, err = e.breaker.Record(context.Background(), "s2", d, gate.Failure)
	require.NoError(t, err)
	e.clk.Advance(cooldown + time.Second) // s2 is HalfOpen: its next admission is a probe
	tr := newGatedChat("s1", "s2")
	done := streamInBackground(t, e, tr)
	<-tr.opened
	e.timer.fire(t)
	<-tr.opened
	snap, err := e.breaker.Snapshot(context.Background(), "s2")
	require.NoError(t, err)
	require.Equal(t, 1, snap.ProbesInFlight, "the hedge holds s2's probe lease")
	tr.release("s1")
	s := <-done
	require.NoError(t, s.Close())
	e.requireGivenBack(t)
	assert.Equal(t, gate.HalfOpen, snapshotState(t, e, "s2"), "a lost probe is neither a success nor a failure")
}

func TestHedgeRunFirstCompleteAnswerWins(t *testing.T) {
	e := newHedgeEnv(t, nil)
	gates := map[string]chan struct{}{"s1": make(chan struct{}), "s2": make(chan struct{})}
	started := make(chan string, 4)
	var s1Err atomic.Value
	fn := func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		started <- src.Name
		select {
		case <-gates[src.Name]:
			return "answer@" + src.Name, transport.Usage{TotalTokens: 5}, nil
		case <-ctx.Done():
			s1Err.Store(ctx.Err())
			return "", transport.Usage{}, ctx.Err()
		}
	}
	done := make(chan string, 1)
	go func() {
		v, err := retry.Run(context.Background(), e.loop, 50, fn)
		assert.NoError(t, err)
		done <- v
	}()
	<-started
	e.timer.fire(t)
	<-started
	close(gates["s2"])
	assert.Equal(t, "answer@s2", <-done)
	e.requireGivenBack(t)
	assert.ErrorIs(t, s1Err.Load().(error), context.Canceled, "the loser is cancelled at once")
	assert.Equal(t, []int64{0}, e.settles.of("s1"))
	assert.Equal(t, []int64{5}, e.settles.of("s2"))
	assert.Equal(t, []string{"fired:s2<s1", "won:s2<s1"}, e.hedgeEvents())
}

func TestHedgeAFailedHedgeLeavesThePrimaryRunning(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	tr.fail["s2"] = errBoom
	done := streamInBackground(t, e, tr)
	<-tr.opened
	e.timer.fire(t)
	<-tr.opened
	tr.release("s2") // fails
	require.Eventually(t, func() bool { return len(e.hedgeEvents()) == 2 }, 5*time.Second, time.Millisecond)
	tr.release("s1")
	s := <-done
	assert.Equal(t, "s1 s1 ", drain(t, s))
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"fired:s2<s1", "wasted:s2<s1"}, e.hedgeEvents())
	assert.Equal(t, gate.Open, snapshotState(t, e, "s2"), "a hedge that failed is an ordinary failure")
}

func TestHedgeCanceledCallGivesBackEveryAttempt(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := openHedged(ctx, chat)
	<-tr.opened
	e.timer.fire(t)
	<-tr.opened
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	e.requireGivenBack(t)
}

func TestHedgeSkipsWhenNoOtherSourceIsAdmitted(t *testing.T) {
	e := newHedgeEnv(t, nil)
	d, err := e.breaker.TryEnter(context.Background(), "s2")
	require.NoError(t, err)
	_, err = e.breaker.Record(context.Background(), "s2", d, gate.Failure) // s2 open
	require.NoError(t, err)
	tr := newGatedChat("s1", "s2")
	done := streamInBackground(t, e, tr)
	<-tr.opened
	e.timer.fire(t)
	require.Eventually(t, func() bool { return len(e.hedgeEvents()) == 1 }, 5*time.Second, time.Millisecond)
	tr.release("s1")
	s := <-done
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"skipped_no_source:<s1"}, e.hedgeEvents())
	assert.Empty(t, e.timer.armed, "the chance is spent: the call does not poll for a source")
	b, ok := e.loop.HedgeBudget()
	require.True(t, ok)
	assert.InDelta(t, 10, b, 1e-9, "a hedge that could not start costs nothing")
}

func TestHedgeBudgetStopsHedgingWhenSpent(t *testing.T) {
	e := newHedgeEnv(t, func(sc *config.ScopeSettings) { sc.HedgeBudget = 0.25 })
	fn := func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		if src.Name == "s1" {
			<-ctx.Done() // s1 never answers: every call hedges while it may
			return "", transport.Usage{}, ctx.Err()
		}
		return "ok", transport.Usage{}, nil
	}
	hedged := 0
	for i := range 14 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := retry.Run(ctx, e.loop, 0, fn); done <- err }()
		seen := len(e.hedgeEvents())
		e.timer.fire(t)
		// The call says what the due hedge did: fired, or skipped for the
		// budget — then it waits on s1 until cancelled.
		var ev string
		require.Eventually(t, func() bool {
			evs := e.hedgeEvents()
			if len(evs) > seen {
				ev = evs[seen]
			}
			return ev != ""
		}, 5*time.Second, time.Millisecond, "call %d reported its due hedge", i)
		if ev == "fired:s2<s1" {
			require.NoError(t, <-done, "call %d", i)
			hedged++
		} else {
			cancel()
			<-done
		}
		cancel()
	}
	// 10 in the bucket at the start, +0.25 per call, −1 per hedge: calls
	// 1-13 hedge (1.0 left before the 13th), then 0.25 + 0.25 is short of
	// one for the 14th.
	assert.Equal(t, 13, hedged)
	e.requireGivenBack(t)
	skipped := 0
	for _, ev := range e.hedgeEvents() {
		if ev == "skipped_budget:<s1" {
			skipped++
		}
	}
	assert.Equal(t, 1, skipped, "the 14th call found the budget spent")
}

func TestHedgeAdaptiveDelayIsTheSourcesQuantile(t *testing.T) {
	e := newHedgeEnv(t, func(sc *config.ScopeSettings) { sc.HedgeAfter, sc.HedgeQuantile = 0, 0.9 })
	lat := e.loop.Admission().Latency()
	fn := func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		return "ok", transport.Usage{}, nil
	}
	// Too few samples: no hedge delay, no timer.
	_, err := retry.Run(context.Background(), e.loop, 0, fn)
	require.NoError(t, err)
	assert.Empty(t, e.timer.armed)
	for i := 1; i <= 100; i++ {
		lat.Observe("s1", time.Duration(i)*time.Millisecond)
	}
	_, err = retry.Run(context.Background(), e.loop, 0, fn)
	require.NoError(t, err)
	select {
	case a := <-e.timer.armed:
		// 100 samples: the newest 1..100 ms plus the first call's 0.
		assert.InDelta(t, float64(90*time.Millisecond), float64(a.d), float64(2*time.Millisecond))
	default:
		t.Fatal("with 20 samples the adaptive delay arms the timer")
	}
}

// slowS1 never answers on s1 (until its ctx ends) and answers at once on s2.
type slowS1 struct{}

func (slowS1) Embed(ctx context.Context, src transport.Source, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	if src.Name == "s1" {
		<-ctx.Done()
		return transport.EmbedResponse{}, ctx.Err()
	}
	out := transport.EmbedResponse{Usage: transport.Usage{TotalTokens: 2}}
	for range req.Inputs {
		out.Vectors = append(out.Vectors, []float32{1})
	}
	return out, nil
}

func (slowS1) OCR(ctx context.Context, src transport.Source, req transport.OCRRequest) (transport.OCRResponse, error) {
	if src.Name == "s1" {
		<-ctx.Done()
		return transport.OCRResponse{}, ctx.Err()
	}
	return transport.OCRResponse{Text: "page@" + src.Name}, nil
}

func TestHedgeEmbedSubBatchesAndOCRPagesEachHedge(t *testing.T) {
	e := newHedgeEnv(t, func(sc *config.ScopeSettings) {
		for i := range sc.Sources {
			sc.Sources[i].BatchSize = 1
		}
	})
	emb := retry.NewEmbed(e.loop, slowS1{}, 2)
	done := make(chan error, 1)
	go func() {
		r, err := emb.Embed(context.Background(), transport.EmbedRequest{Inputs: []string{"a", "b"}})
		if err == nil && len(r.Vectors) != 2 {
			err = errors.New("missing vectors")
		}
		done <- err
	}()
	e.timer.fire(t)
	e.timer.fire(t)
	require.NoError(t, <-done)
	e.requireGivenBack(t)

	ocr := retry.NewOCR(e.loop, slowS1{}, 2)
	go func() {
		r, err := ocr.Pages(context.Background(), []transport.OCRRequest{{Image: []byte("p0")}, {Image: []byte("p1")}})
		if err == nil && (r[0].Text != "page@s2" || r[1].Text != "page@s2") {
			err = errors.New("pages not from the hedge")
		}
		done <- err
	}()
	e.timer.fire(t)
	e.timer.fire(t)
	require.NoError(t, <-done)
	e.requireGivenBack(t)
	ev := e.hedgeEvents()
	assert.Len(t, ev, 8, "fired and won for each of 2 sub-batches and 2 pages: %v", ev)
	assert.Equal(t, []int64{0, 0, 0, 0}, e.settles.of("s1"))
}

// streamResult is what a chat's Stream returned.
type streamResult struct {
	s   *retry.Stream
	err error
}

// hedgedStream opens a stream of hiRequest on chat on a goroutine of its
// own, waits until tr opened it on s1, runs fire (which runs out the hedge
// delay), waits until the hedge opened on s2, and delivers what Stream
// returns once it does.
func hedgedStream(t *testing.T, chat *retry.Chat, tr *gatedChat, fire func()) <-chan streamResult {
	t.Helper()
	done := make(chan streamResult, 1)
	go func() {
		s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		done <- streamResult{s, err}
	}()
	require.Equal(t, "s1", <-tr.opened)
	fire()
	require.Equal(t, "s2", <-tr.opened)
	return done
}

// openHedged opens a stream of hiRequest on chat on a goroutine of its own
// and delivers the error it ended with (the stream is dropped).
func openHedged(ctx context.Context, chat *retry.Chat) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := chat.Stream(ctx, transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		done <- err
	}()
	return done
}

// readHedged opens a stream of hiRequest on chat on a goroutine of its own,
// reads it whole and closes it, and delivers the first error.
func readHedged(t *testing.T, chat *retry.Chat) <-chan error {
	done := make(chan error, 1)
	go func() {
		s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		if err == nil {
			drain(t, s)
			err = s.Close()
		}
		done <- err
	}()
	return done
}
