package retry_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// fakeEmbed returns for input "i" the vector {i}; it fails every batch that
// contains an input listed in fail (once per listing), and tracks how many
// batches run at once.
type fakeEmbed struct {
	mu       sync.Mutex
	fail     map[string]error
	batches  [][]string
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	// gate, when set, is waited on by every batch: the test controls overlap.
	gate func()
}

func (f *fakeEmbed) Embed(ctx context.Context, src transport.Source, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if f.gate != nil {
		f.gate()
	}
	f.mu.Lock()
	f.batches = append(f.batches, req.Inputs)
	for _, in := range req.Inputs {
		if err, ok := f.fail[in]; ok {
			f.mu.Unlock()
			return transport.EmbedResponse{}, err
		}
	}
	f.mu.Unlock()
	out := transport.EmbedResponse{Usage: transport.Usage{TotalTokens: len(req.Inputs)}}
	for _, in := range req.Inputs {
		i, _ := strconv.Atoi(in)
		out.Vectors = append(out.Vectors, []float32{float32(i)})
	}
	return out, nil
}

func inputs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

func batchSizes(sizes ...int) envOpt {
	return withScope(func(s *config.ScopeSettings) {
		s.Name = "EMBEDDING"
		s.Sources = nil
		for i, b := range sizes {
			s.Sources = append(s.Sources, config.Source{Name: fmt.Sprintf("s%d", i+1), BatchSize: b})
		}
	})
}

func TestEmbedSplitsByTheSmallestBatchSizeAndKeepsInputOrder(t *testing.T) {
	e := newEnv(t, batchSizes(8, 3))
	tr := &fakeEmbed{}
	emb := retry.NewEmbed(e.loop, tr, 4)
	assert.Equal(t, 3, emb.BatchSize(), "any sub-batch may land on any source")
	resp, err := emb.Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(10)})
	require.NoError(t, err)
	require.Len(t, resp.Vectors, 10)
	for i, v := range resp.Vectors {
		assert.Equal(t, []float32{float32(i)}, v, "input order")
	}
	assert.Len(t, tr.batches, 4, "3+3+3+1")
	assert.Equal(t, 10, resp.Usage.TotalTokens)
	e.requireNothingHeld(t)
}

func TestEmbedFailingSubBatchKeepsTheOthersResults(t *testing.T) {
	e := newEnv(t, batchSizes(2, 2))
	bad := httpErr(422, 0, "input 5 is too long")
	tr := &fakeEmbed{fail: map[string]error{"5": bad}}
	resp, err := retry.NewEmbed(e.loop, tr, 2).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(8)})
	var be *errs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 8, be.Total)
	require.Len(t, be.Failed, 1)
	assert.Equal(t, 4, be.Failed[0].Start)
	assert.Equal(t, 6, be.Failed[0].End)
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he, "the sub-batch's own error is reachable")
	for i, v := range resp.Vectors {
		if i == 4 || i == 5 {
			assert.Nil(t, v)
			continue
		}
		assert.Equal(t, []float32{float32(i)}, v, "the other sub-batches' vectors are kept")
	}
	e.requireNothingHeld(t)
}

func TestEmbedBoundsConcurrentSubBatches(t *testing.T) {
	e := newEnv(t, batchSizes(1, 1))
	const limit = 3
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	tr := &fakeEmbed{gate: func() {
		arrived <- struct{}{}
		<-release
	}}
	done := make(chan error, 1)
	go func() {
		_, err := retry.NewEmbed(e.loop, tr, limit).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(9)})
		done <- err
	}()
	for range limit {
		<-arrived // the first three sub-batches are in flight together
	}
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, int64(limit), tr.maxSeen.Load(), "never more than the bound at once")
}

func TestNoGoroutineOutlivesASplitCall(t *testing.T) {
	e := newEnv(t, batchSizes(1))
	var during atomic.Int64
	tr := &fakeEmbed{gate: func() { during.CompareAndSwap(0, int64(retryGoroutines())) }}
	_, err := retry.NewEmbed(e.loop, tr, 4).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(12)})
	require.NoError(t, err)
	require.Positive(t, during.Load(), "the count sees the workers while they run")
	// Every worker has called wg.Done before Embed returned; what may remain
	// is a worker between that and its exit. Yield (never sleep) until the
	// scheduler has retired them.
	for i := 0; i < 100_000 && retryGoroutines() > 0; i++ {
		runtime.Gosched()
	}
	assert.Zero(t, retryGoroutines(), "a goroutine of package retry outlived the call")
}

// retryGoroutines counts the goroutines running code of package retry (the
// test's own goroutines run retry_test code and are not counted).
func retryGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/pgw-go/pgw/retry.") {
			n++
		}
	}
	return n
}

func TestPanicInASubBatchIsReraisedInTheCallerLeakingNothing(t *testing.T) {
	e := newEnv(t, batchSizes(1, 1))
	tr := &fakeEmbed{gate: func() { panic("embedder blew up") }}
	assert.PanicsWithValue(t, "embedder blew up", func() {
		_, _ = retry.NewEmbed(e.loop, tr, 3).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(6)})
	})
	e.requireNothingHeld(t)
}

type fakeOCR struct {
	mu   sync.Mutex
	fail map[string]error
	seen []string
}

func (f *fakeOCR) OCR(_ context.Context, src transport.Source, req transport.OCRRequest) (transport.OCRResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, string(req.Image))
	if err, ok := f.fail[string(req.Image)]; ok {
		delete(f.fail, string(req.Image))
		return transport.OCRResponse{}, err
	}
	return transport.OCRResponse{Text: "text of " + string(req.Image), Usage: transport.Usage{TotalTokens: 5}}, nil
}

func TestOCROneImagePerAttempt(t *testing.T) {
	e := newEnv(t)
	tr := &fakeOCR{fail: map[string]error{"page": httpErr(503, 0, "busy")}}
	resp, err := retry.NewOCR(e.loop, tr, 0).OCR(context.Background(), transport.OCRRequest{Image: []byte("page")})
	require.NoError(t, err)
	assert.Equal(t, "text of page", resp.Text)
	assert.Equal(t, []string{"page", "page"}, tr.seen, "the failed attempt is retried with the same image")
	e.requireNothingHeld(t)
}

func TestOCRPagesRunConcurrentlyInOrderAndKeepPartialResults(t *testing.T) {
	e := newEnv(t, withScope(func(s *config.ScopeSettings) { s.Name = "OCR" }))
	bad := httpErr(413, 0, "image too large")
	tr := &fakeOCR{fail: map[string]error{"p2": bad}}
	pages := []transport.OCRRequest{{Image: []byte("p0")}, {Image: []byte("p1")}, {Image: []byte("p2")}, {Image: []byte("p3")}}
	out, err := retry.NewOCR(e.loop, tr, 2).Pages(context.Background(), pages)
	var be *errs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "OCR", be.Scope)
	require.Len(t, be.Failed, 1)
	assert.Equal(t, 2, be.Failed[0].Start)
	assert.Equal(t, []string{"text of p0", "text of p1", "", "text of p3"},
		[]string{out[0].Text, out[1].Text, out[2].Text, out[3].Text})
	e.requireNothingHeld(t)
}

// selfContendedLoop is an EMBEDDING scope under QUOTA_FULL=fail_fast whose
// sources s1, s2 … have the given MAX_IN_FLIGHT each (in their settings
// and in the quota alike) and a BATCH_SIZE of 1.
func selfContendedLoop(t *testing.T, maxInFlight ...int) *retry.Loop {
	t.Helper()
	return observedSelfContendedLoop(t, nil, maxInFlight...)
}

// observedSelfContendedLoop is selfContendedLoop with obs as its observer.
func observedSelfContendedLoop(t *testing.T, obs observe.Observer, maxInFlight ...int) *retry.Loop {
	t.Helper()
	b, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	sc := config.ScopeSettings{Name: "EMBEDDING", QuotaFull: config.ModeFailFast}
	limits := map[string]gate.Limits{}
	for i, n := range maxInFlight {
		name := fmt.Sprintf("s%d", i+1)
		sc.Sources = append(sc.Sources, config.Source{Name: name, Timeout: 10 * time.Second, BatchSize: 1, MaxInFlight: n})
		limits[name] = gate.Limits{MaxInFlight: n}
	}
	q, err := memory.NewQuota(limits)
	require.NoError(t, err)
	l, err := retry.New(retry.Config{Scope: sc, Breaker: b, Quota: q, Observer: obs, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return l
}

// heldParts runs call and hands the test each sub-batch as it reaches the
// transport: the test releases it, and sees how many were in flight.
type heldParts struct {
	arrived chan struct{}
	release chan struct{}
}

func newHeldParts() *heldParts {
	return &heldParts{arrived: make(chan struct{}, 64), release: make(chan struct{})}
}

func (h *heldParts) gate() {
	h.arrived <- struct{}{}
	<-h.release
}

// drive releases each part that arrives until call returns, and returns its
// error.
func (h *heldParts) drive(t *testing.T, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	for {
		select {
		case <-h.arrived:
			h.release <- struct{}{}
		case err := <-done:
			return err
		case <-t.Context().Done():
			t.Fatal("the call did not return")
		}
	}
}

func TestSplitCallNeverCompetesWithItselfForInFlightSlots(t *testing.T) {
	// One slot, fail_fast: parts run one at a time, and none is refused the
	// slot another part of the same call holds.
	l := selfContendedLoop(t, 1)
	h := newHeldParts()
	tr := &fakeEmbed{gate: h.gate}
	err := h.drive(t, func() error {
		_, err := retry.NewEmbed(l, tr, 4).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(6)})
		return err
	})
	require.NoError(t, err, "no part may be refused a slot its own call holds")
	assert.Len(t, tr.batches, 6)
	assert.Equal(t, int64(1), tr.maxSeen.Load())

	// Two sources with 1 and 2 slots: three parts at once, not four.
	l = selfContendedLoop(t, 1, 2)
	h = newHeldParts()
	tr = &fakeEmbed{gate: h.gate}
	err = h.drive(t, func() error {
		_, err := retry.NewEmbed(l, tr, 4).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(9)})
		return err
	})
	require.NoError(t, err)
	assert.LessOrEqual(t, tr.maxSeen.Load(), int64(3))
}

func TestSplitOCRNeverCompetesWithItselfForInFlightSlots(t *testing.T) {
	l := selfContendedLoop(t, 1)
	h := newHeldParts()
	tr := &heldOCR{h: h}
	err := h.drive(t, func() error {
		_, err := retry.NewOCR(l, tr, 4).Pages(context.Background(), []transport.OCRRequest{
			{Image: []byte("a")}, {Image: []byte("b")}, {Image: []byte("c")}})
		return err
	})
	require.NoError(t, err, "no page may be refused a slot its own call holds")
	assert.Equal(t, int64(3), tr.calls.Load())
}

// heldOCR is an OCR transport whose every page waits for heldParts.
type heldOCR struct {
	h     *heldParts
	calls atomic.Int64
}

func (o *heldOCR) OCR(_ context.Context, _ transport.Source, req transport.OCRRequest) (transport.OCRResponse, error) {
	o.calls.Add(1)
	o.h.gate()
	return transport.OCRResponse{Text: string(req.Image)}, nil
}

// A split call on a scope whose only slot another caller holds, under
// QUOTA_FULL=wait: its parts run one at a time (the scope's one slot), and
// once one has waited out the stall window with nothing of the scope
// delivered, the parts that have not begun end stalled with it rather than
// wait a window each — the call ends stalled about one window after it
// began, as when its parts all waited at once.
func TestASplitCallOnAStalledScopeEndsAfterOneStallWindow(t *testing.T) {
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{}, memory.WithClock(clk))
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}}, memory.WithClock(clk))
	require.NoError(t, err)
	sleeper := &fakeSleep{clk: clk}
	const w = 5 * time.Minute
	l, err := retry.New(retry.Config{
		Scope: config.ScopeSettings{Name: "EMBEDDING", QuotaFull: config.ModeWait, PollInterval: poll, StallWindow: w,
			Sources: []config.Source{{Name: "s1", Timeout: 10 * time.Second, BatchSize: 1, MaxInFlight: 1}}},
		Breaker: b, Quota: q, Clock: clk, Sleep: sleeper.sleep, Rand: func() float64 { return 0 },
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	held, _, err := q.Acquire(context.Background(), "s1", 0) // another caller's
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Release(context.Background(), held) })

	start := clk.Now()
	tr := &fakeEmbed{}
	_, err = retry.NewEmbed(l, tr, 4).Embed(context.Background(), transport.EmbedRequest{Inputs: inputs(4)})
	requireEveryPartFailed(t, err, 4, errs.ReasonStalled)
	assert.Empty(t, tr.batches)
	assert.LessOrEqual(t, clk.Now().Sub(start), w+2*poll, "one stall window, not one per part")

	// OCR pages alike.
	start = clk.Now()
	ocr := &heldOCR{h: newHeldParts()}
	_, err = retry.NewOCR(l, ocr, 4).Pages(context.Background(), []transport.OCRRequest{
		{Image: []byte("a")}, {Image: []byte("b")}, {Image: []byte("c")}})
	requireEveryPartFailed(t, err, 3, errs.ReasonStalled)
	assert.Zero(t, ocr.calls.Load())
	assert.LessOrEqual(t, clk.Now().Sub(start), w+2*poll, "one stall window, not one per page")
}

// requireEveryPartFailed checks that err is a split call's BatchError whose
// n parts all failed as AllSourcesExhausted with reason.
func requireEveryPartFailed(t *testing.T, err error, n int, reason string) {
	t.Helper()
	var be *errs.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, n)
	for _, f := range be.Failed {
		var ase *errs.AllSourcesExhausted
		require.ErrorAs(t, f.Err, &ase)
		assert.Equal(t, reason, ase.Reason)
	}
}
