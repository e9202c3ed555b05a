package admission_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
)

const (
	cooldown = 60 * time.Second
	probeTTL = 600 * time.Second
	poll     = 50 * time.Millisecond
	window   = 300 * time.Second
)

// countingGate wraps a breaker gate and counts the queries a call makes.
type countingGate struct {
	gate.ProviderGate
	tryEnter, record, retryAfter atomic.Int64
}

func (g *countingGate) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	g.tryEnter.Add(1)
	return g.ProviderGate.TryEnter(ctx, s)
}

func (g *countingGate) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	g.record.Add(1)
	return g.ProviderGate.Record(ctx, s, d, o)
}

func (g *countingGate) RetryAfter(ctx context.Context, s []string) (time.Duration, error) {
	g.retryAfter.Add(1)
	return g.ProviderGate.RetryAfter(ctx, s)
}

// queries counts what a waiting call asks the gate before it is admitted.
func (g *countingGate) queries() int64 { return g.tryEnter.Load() + g.retryAfter.Load() }

// fakeQuota is a quota gate whose per-source answers a test sets; it counts
// in-flight permits and settled tokens so leaks show.
type fakeQuota struct {
	mu       sync.Mutex
	reject   map[string]time.Duration // source → RetryAfter of its rejection
	inFlight map[string]int
	reserved map[string]int64 // tokens reserved and not refunded
	next     uint64
}

func newFakeQuota() *fakeQuota {
	return &fakeQuota{reject: map[string]time.Duration{}, inFlight: map[string]int{}, reserved: map[string]int64{}}
}

func (q *fakeQuota) setReject(source string, retryAfter time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reject[source] = retryAfter
}

func (q *fakeQuota) clear(source string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.reject, source)
}

func (q *fakeQuota) Acquire(_ context.Context, source string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ra, ok := q.reject[source]; ok {
		return gate.Permit{}, gate.QuotaDecision{RetryAfter: ra, Limit: "rpm"}, nil
	}
	q.next++
	q.inFlight[source]++
	q.reserved[source] += est
	return gate.Permit{Source: source, ID: strconv.FormatUint(q.next, 10), Tokens: est}, gate.QuotaDecision{Allowed: true}, nil
}

func (q *fakeQuota) Settle(_ context.Context, p gate.Permit, actual int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reserved[p.Source] += actual - p.Tokens
	return nil
}

func (q *fakeQuota) Release(_ context.Context, p gate.Permit) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight[p.Source]--
	return nil
}

func (q *fakeQuota) held(source string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight[source]
}

func (q *fakeQuota) tokens(source string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reserved[source]
}

// fakePacer allows up to limit slots per source.
type fakePacer struct {
	mu        sync.Mutex
	limit     map[string]int
	held      map[string]int
	throttled map[string]int
}

func newFakePacer() *fakePacer {
	return &fakePacer{limit: map[string]int{}, held: map[string]int{}, throttled: map[string]int{}}
}

func (p *fakePacer) TryAcquire(source string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.limit[source]; ok && p.held[source] >= l {
		return false
	}
	p.held[source]++
	return true
}

func (p *fakePacer) Release(source string, o admission.PaceOutcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[source]--
	if o == admission.PaceThrottled {
		p.throttled[source]++
	}
}

func (p *fakePacer) holding(source string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[source]
}

// fakeSleep advances the fake clock by the nap instead of waiting, and keeps
// every nap; it honours a done ctx like the real sleep.
type fakeSleep struct {
	clk *testutil.FakeClock
	// onNap, when set, runs after the clock moved, with the nap's number
	// (1, 2, …): the world changing while the call sleeps.
	onNap func(n int)
	mu    sync.Mutex
	naps  []time.Duration
}

func (s *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.naps = append(s.naps, d)
	n := len(s.naps)
	s.mu.Unlock()
	s.clk.Advance(d)
	if s.onNap != nil {
		s.onNap(n)
	}
	return nil
}

func (s *fakeSleep) taken() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.naps...)
}

// fakeStall is a stall budget measured from its start on the fake clock: the
// whole elapsed time counts as stall (the admission tests make no attempts
// that take time), and no other call of the scope delivers.
type fakeStall struct {
	clk    gate.Clock
	start  time.Time
	window time.Duration
}

func (s *fakeStall) elapsed() time.Duration   { return s.clk.Now().Sub(s.start) }
func (s *fakeStall) Stalled() bool            { return s.elapsed() > s.window }
func (s *fakeStall) Remaining() time.Duration { return s.window - s.elapsed() }

// fixture is one scope wired for a test.
type fixture struct {
	clk     *testutil.FakeClock
	breaker *memory.Breaker
	gate    *countingGate
	quota   *fakeQuota
	pacer   *fakePacer
	sleeper *fakeSleep
	logs    *logSink
	adm     *admission.SourceAdmission
}

type fixtureOpt func(*admission.Config)

func withModes(quotaFull, circuitOpen admission.Mode) fixtureOpt {
	return func(c *admission.Config) { c.QuotaFull, c.CircuitOpen = quotaFull, circuitOpen }
}

func withSources(src ...admission.Source) fixtureOpt {
	return func(c *admission.Config) { c.Sources = src }
}

func withRand(r func() float64) fixtureOpt {
	return func(c *admission.Config) { c.Rand = r }
}

func newFixture(t testing.TB, opts ...fixtureOpt) *fixture {
	t.Helper()
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, MaxCooldown: 4 * cooldown, ProbeTTL: probeTTL},
		memory.WithClock(clk))
	require.NoError(t, err)
	f := &fixture{clk: clk, breaker: b, gate: &countingGate{ProviderGate: b}, quota: newFakeQuota(),
		pacer: newFakePacer(), sleeper: &fakeSleep{clk: clk}, logs: &logSink{}}
	cfg := admission.Config{
		Scope:        "CHAT",
		Sources:      []admission.Source{{Name: "s1"}},
		Breaker:      f.gate,
		Quota:        f.quota,
		Pacer:        f.pacer,
		PollInterval: poll,
		Clock:        clk,
		Sleep:        f.sleeper.sleep,
		Rand:         func() float64 { return 0.5 },
		Logger:       slog.New(f.logs),
	}
	for _, o := range opts {
		o(&cfg)
	}
	f.adm, err = admission.New(cfg)
	require.NoError(t, err)
	return f
}

func (f *fixture) stall() *fakeStall {
	return &fakeStall{clk: f.clk, start: f.clk.Now(), window: window}
}

// open trips source's breaker (ConsecutiveFailures is 1): it is Open for one
// cooldown from now.
func (f *fixture) open(t testing.TB, source string) {
	t.Helper()
	d, err := f.breaker.TryEnter(context.Background(), source)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	_, err = f.breaker.Record(context.Background(), source, d, gate.Failure)
	require.NoError(t, err)
}

// halfOpen moves an open source past its cooldown and takes its only probe
// lease, as a concurrent call would; the returned decision is that probe.
func (f *fixture) takeProbe(t testing.TB, source string) gate.Decision {
	t.Helper()
	d, err := f.breaker.TryEnter(context.Background(), source)
	require.NoError(t, err)
	require.True(t, d.Probe, "expected to take the probe lease of %s", source)
	return d
}

func (f *fixture) snapshot(t testing.TB, source string) gate.Snapshot {
	t.Helper()
	s, err := f.breaker.Snapshot(context.Background(), source)
	require.NoError(t, err)
	return s
}

// run drives one call the way the retry loops do: pick, wait when nothing
// runs, and hand the admitted ticket to attempt, whose result is given back.
func (f *fixture) run(ctx context.Context, call *admission.Call, attempt func(t *admission.Ticket) (admission.Result, bool)) (*admission.Ticket, error) {
	for {
		t, rej, err := call.Pick(ctx, 10)
		if err != nil {
			return nil, err
		}
		if t == nil {
			if err := call.OnNoRunnable(ctx, rej); err != nil {
				return nil, err
			}
			continue
		}
		res, finished := attempt(t)
		_ = t.Done(ctx, res)
		if finished {
			return t, nil
		}
	}
}

func succeed(*admission.Ticket) (admission.Result, bool) {
	return admission.Result{Outcome: gate.Success, Tokens: 10}, true
}

// logSink is a slog handler that keeps every record.
type logSink struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

func (l *logSink) records(level slog.Level) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.recs {
		if r.Level == level {
			out = append(out, r)
		}
	}
	return out
}

func attrs(r slog.Record) map[string]slog.Value {
	m := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
	return m
}
