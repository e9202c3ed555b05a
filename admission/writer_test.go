package admission_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
)

// stallGate is a breaker gate whose Record waits until the test lets it go
// (or its ctx ends), as a slow or silent Redis would; it remembers the ctx
// each Record got.
type stallGate struct {
	gate.ProviderGate
	hold    chan struct{} // Record waits on it while non-nil
	mu      sync.Mutex
	ctxs    []context.Context
	entered chan struct{}
}

func (g *stallGate) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	g.mu.Lock()
	g.ctxs = append(g.ctxs, ctx)
	g.mu.Unlock()
	if g.entered != nil {
		g.entered <- struct{}{}
	}
	if g.hold != nil {
		select {
		case <-g.hold:
		case <-ctx.Done():
			return gate.Update{}, ctx.Err()
		}
	}
	return g.ProviderGate.Record(ctx, s, d, o)
}

func newWriter(t *testing.T, cfg admission.WriterConfig) *admission.Writer {
	t.Helper()
	w, err := admission.NewWriter(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { closeWriter(t, w) })
	return w
}

// bound is how long a test waits for anything the writer should do at once
// (a write, a Pick that waits for one) before it fails, instead of hanging
// the test binary: generous, never reached by a test that passes.
const bound = 30 * time.Second

// closeWriter closes w at a test's end. A Close that does not return within
// twice the bound — a write stuck on a gate that ignores its ctx, e.g. a
// hold a failed test never released — fails the test with every
// goroutine's stack instead of hanging the test binary, which would lose
// the failure that led to it.
func closeWriter(t *testing.T, w *admission.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	done := make(chan struct{})
	go func() {
		_ = w.Close(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * bound):
		buf := make([]byte, 1<<20)
		t.Errorf("the outcome writer's Close did not return within %v: a write is stuck\n%s",
			2*bound, buf[:runtime.Stack(buf, true)])
	}
}

// bounded is a ctx for a Pick or Done on an admission with a writer: Pick
// may wait for the writer, which a test must not wait for forever.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx
}

// await receives from ch, or fails the test when nothing comes within the
// bound: what the test waits for did not happen.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("%s: nothing within %v", what, bound)
		panic("unreachable")
	}
}

func withWriter(w *admission.Writer) fixtureOpt {
	return func(c *admission.Config) { c.Writer = w }
}

func withBreaker(g gate.ProviderGate) fixtureOpt {
	return func(c *admission.Config) { c.Breaker = g }
}

// eventually polls cond for up to 5 s (the writer is asynchronous).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, what)
}

func TestWriterDoneReturnsBeforeAStalledGiveBack(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Timeout: time.Minute})
	sg := &stallGate{hold: make(chan struct{})}
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker

	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "trace-1"), time.Minute)
	tk, _, err := f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	require.Equal(t, 1, f.quota.held("s1"))
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: 7}))
	cancel() // the caller is gone: its give-back still happens
	require.Zero(t, f.pacer.holding("s1"), "the pacer slot is returned at once")
	require.Equal(t, 1, f.quota.held("s1"), "the permit waits behind the stalled Record")
	close(sg.hold)
	eventually(t, "permit given back by the writer", func() bool { return f.quota.held("s1") == 0 })
	require.EqualValues(t, 7, f.quota.tokens("s1"))
	eventually(t, "counted as written", func() bool { return w.Stats().Written == 1 })

	sg.mu.Lock()
	wctx := sg.ctxs[0]
	sg.mu.Unlock()
	require.Equal(t, "trace-1", wctx.Value(ctxKey{}), "the write keeps the caller's values")
	_, hasDeadline := wctx.Deadline()
	require.True(t, hasDeadline, "every write has its own deadline")
}

type ctxKey struct{}

func TestWriterTimesOutEachWrite(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Timeout: 20 * time.Millisecond, Workers: 1})
	sg := &stallGate{hold: make(chan struct{})} // never released
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	for range 3 {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		require.NoError(t, err)
		require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	}
	eventually(t, "three writes failed on their timeout", func() bool { return w.Stats().Failed == 3 })
	require.Zero(t, w.Stats().Written)
	// The quota give-back still ran after the breaker's failure.
	require.Zero(t, f.quota.held("s1"))
}

func TestWriterFullQueueDropsAndCounts(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Queue: 1, Workers: 1, Timeout: time.Minute})
	f, sg := stalledWriterFixture(t, w)
	pick := func() *admission.Ticket { return pickOne(t, f) }
	t1, t2, t3 := pick(), pick(), pick()
	require.NoError(t, t1.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	await(t, sg.entered, "the worker writes t1's outcome") // the only worker holds it
	require.NoError(t, t2.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	err := t3.Done(bounded(t), admission.Result{Outcome: gate.Success})
	require.ErrorIs(t, err, admission.ErrWriterFull)
	require.EqualValues(t, 1, w.Stats().Dropped)
	require.Equal(t, 1, w.Stats().Queued)
	require.NoError(t, t3.Done(bounded(t), admission.Result{}), "Done acts once")
	close(sg.hold)
	eventually(t, "t1 and t2 written", func() bool { return w.Stats().Written == 2 })
	require.Equal(t, 1, f.quota.held("s1"), "the dropped permit is left to its lease")
}

func TestWriterCloseFlushesWithinItsDeadline(t *testing.T) {
	w, err := admission.NewWriter(admission.WriterConfig{Workers: 1, Timeout: time.Minute})
	require.NoError(t, err)
	f := newFixture(t, withWriter(w))
	f.pacer.limit = map[string]int{"s1": 100}
	for range 50 {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		require.NoError(t, err)
		require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	}
	require.NoError(t, w.Close(bounded(t)))
	require.Equal(t, admission.WriterStats{Written: 50}, w.Stats(), "Close wrote every queued outcome")
	require.Zero(t, f.quota.held("s1"))

	// After Close an outcome is dropped, not lost silently.
	tk, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.ErrorIs(t, tk.Done(bounded(t), admission.Result{}), admission.ErrWriterFull)
	require.NoError(t, w.Close(bounded(t)), "Close is idempotent")
}

func TestWriterCloseGivesUpAtItsDeadline(t *testing.T) {
	w, err := admission.NewWriter(admission.WriterConfig{Workers: 1, Timeout: time.Hour})
	require.NoError(t, err)
	f, sg := stalledWriterFixture(t, w)
	for range 3 {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		require.NoError(t, err)
		require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	}
	await(t, sg.entered, "the worker writes the first outcome")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err = w.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	st := w.Stats()
	require.EqualValues(t, 1, st.Failed, "the write in progress was cancelled")
	require.EqualValues(t, 2, st.Dropped, "the queued ones were dropped")
}

// A probe's outcome waits in the writer; the same admission's next Pick of
// that source must not find the probe still in flight (a HalfOpen
// rejection), but the breaker closed by it.
func TestWriterProbeOutcomeIsWrittenBeforeTheNextTryEnter(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{})
	sg := &stallGate{hold: make(chan struct{})}
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	f.open(t, "s1")
	f.clk.Advance(cooldown)

	probe, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.True(t, probe.Decision.Probe)
	require.NoError(t, probe.Done(bounded(t), admission.Result{Outcome: gate.Success}))

	// The next Pick waits for the probe's outcome…
	got := make(chan *admission.Ticket, 1)
	go func() {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		if err != nil {
			tk = nil
		}
		got <- tk
	}()
	select {
	case <-got:
		t.Fatal("Pick asked the breaker while the probe's outcome was still queued")
	case <-time.After(20 * time.Millisecond):
	}
	close(sg.hold) // …and is admitted once it is written.
	tk := await(t, got, "the Pick after the probe")
	require.NotNil(t, tk)
	require.False(t, tk.Decision.Probe)
	require.Equal(t, gate.Closed, tk.Decision.State)
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))

	// A caller whose ctx ends during that wait gets ctx's error.
	sg = &stallGate{hold: make(chan struct{})}
	f = newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	f.open(t, "s1")
	f.clk.Advance(cooldown)
	probe, _, err = f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.True(t, probe.Decision.Probe)
	require.NoError(t, probe.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, _, err = f.adm.Pick(ctx, nil, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(sg.hold)
}

func TestWriterStartsNoGoroutinePerCall(t *testing.T) {
	before := runtime.NumGoroutine()
	w, err := admission.NewWriter(admission.WriterConfig{Workers: 4})
	require.NoError(t, err)
	f := newFixture(t, withWriter(w))
	f.pacer.limit = map[string]int{"s1": 1 << 20}
	for range 1000 {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		require.NoError(t, err)
		require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before+4)
	require.NoError(t, w.Close(bounded(t)))
	require.EqualValues(t, 1000, w.Stats().Written)
	if !assertEventually(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("workers not gone: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

func TestNewWriterRejectsBadConfig(t *testing.T) {
	_, err := admission.NewWriter(admission.WriterConfig{Queue: -1, Workers: -2, Timeout: -time.Second})
	var ce *admission.ConfigError
	require.True(t, errors.As(err, &ce))
	for _, want := range []string{"Queue=-1", "Workers=-2", "Timeout=-1s"} {
		require.Contains(t, err.Error(), want)
	}
}

func assertEventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

func TestIsWriteTellsTheWritersContext(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{})
	sg := &stallGate{}
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	ctx := bounded(t)
	require.False(t, admission.IsWrite(ctx))
	tk, _, err := f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))
	eventually(t, "written", func() bool { return w.Stats().Written == 1 })
	sg.mu.Lock()
	defer sg.mu.Unlock()
	require.True(t, admission.IsWrite(sg.ctxs[0]))
}

// localBreaker and localQuota say that every decision and permit came from
// an in-process fallback (as a Redis failover gate does during an outage).
type localBreaker struct{ gate.ProviderGate }

func (localBreaker) LocalDecision(gate.Decision) bool { return true }

type localQuota struct{ gate.QuotaGate }

func (localQuota) LocalPermit(gate.Permit) bool { return true }

// A decision and a permit that local gates granted are given back on the
// caller's goroutine, not handed to the writer: nothing to wait for.
func TestWriterSkippedForLocalGiveBacks(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Timeout: time.Minute})
	var lb localBreaker
	var fq *fakeQuota
	f := newFixture(t, withWriter(w), withBreaker(&lb), func(c *admission.Config) {
		fq = c.Quota.(*fakeQuota)
		c.Quota = localQuota{c.Quota}
	})
	lb.ProviderGate = f.breaker
	tk, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	require.Equal(t, 1, fq.held("s1"))
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success, Tokens: 7}))
	require.Zero(t, fq.held("s1"), "given back before Done returned")
	require.EqualValues(t, 7, fq.tokens("s1"))
	require.Equal(t, admission.WriterStats{}, w.Stats(), "the writer saw nothing")
}

// Unwritten counts an outcome from the moment Done hands it over until it
// is written, failed or dropped — also while a worker is writing it, when
// it is no longer queued.
func TestWriterStatsCountAnOutcomeBeingWrittenAsUnwritten(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Workers: 1, Timeout: time.Minute, Linger: -1})
	sg := &stallGate{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	tk, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	await(t, sg.entered, "the worker writes it")
	s := w.Stats()
	require.Zero(t, s.Queued, "taken from the queue")
	require.Equal(t, 1, s.Unwritten, "but not written yet")
	close(sg.hold)
	eventually(t, "written", func() bool { return w.Stats().Written == 1 })
	require.Zero(t, w.Stats().Unwritten)

	// A dropped outcome is never counted as unwritten.
	require.NoError(t, w.Close(bounded(t)))
	tk, _, err = f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.ErrorIs(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}), admission.ErrWriterFull)
	require.Equal(t, admission.WriterStats{Written: 1, Dropped: 1}, w.Stats())
}

// stalledWriterFixture is a fixture whose outcomes go to w and whose
// breaker's Record blocks in sg until the test lets it go: the test holds
// the writer's workers at will. s1's pacer admits 10 at once.
func stalledWriterFixture(t *testing.T, w *admission.Writer) (*fixture, *stallGate) {
	t.Helper()
	sg := &stallGate{hold: make(chan struct{}), entered: make(chan struct{}, 8)}
	f := newFixture(t, withWriter(w), withBreaker(sg))
	sg.ProviderGate = f.breaker
	f.pacer.limit = map[string]int{"s1": 10}
	return f, sg
}

// pickOne runs one admission round of f that must admit.
func pickOne(t *testing.T, f *fixture) *admission.Ticket {
	t.Helper()
	tk, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	return tk
}
