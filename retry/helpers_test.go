package retry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

const (
	cooldown = 60 * time.Second
	poll     = 50 * time.Millisecond
	window   = 300 * time.Second
)

// countingGate counts the breaker queries a call makes.
type countingGate struct {
	gate.ProviderGate
	tryEnter, retryAfter atomic.Int64
}

func (g *countingGate) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	g.tryEnter.Add(1)
	return g.ProviderGate.TryEnter(ctx, s)
}

func (g *countingGate) RetryAfter(ctx context.Context, s []string) (time.Duration, error) {
	g.retryAfter.Add(1)
	return g.ProviderGate.RetryAfter(ctx, s)
}

// fakePacer counts slots and throttles per source.
type fakePacer struct {
	mu        sync.Mutex
	held      map[string]int
	throttled map[string]int
}

func (p *fakePacer) TryAcquire(source string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
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

func (p *fakePacer) get(m map[string]int, source string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m[source]
}

// fakeSleep advances the fake clock instead of waiting.
type fakeSleep struct {
	clk  *testutil.FakeClock
	mu   sync.Mutex
	naps []time.Duration
}

func (s *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.naps = append(s.naps, d)
	s.mu.Unlock()
	s.clk.Advance(d)
	return nil
}

func (s *fakeSleep) taken() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.naps...)
}

type env struct {
	clk     *testutil.FakeClock
	breaker *memory.Breaker
	gate    *countingGate
	quota   *memory.Quota
	pacer   *fakePacer
	sleeper *fakeSleep
	loop    *retry.Loop
}

type envOpt func(*retry.Config)

func withScope(f func(*config.ScopeSettings)) envOpt {
	return func(c *retry.Config) { f(&c.Scope) }
}

func names(ns ...string) envOpt {
	return withScope(func(s *config.ScopeSettings) {
		s.Sources = nil
		for _, n := range ns {
			s.Sources = append(s.Sources, config.Source{Name: n, Timeout: 10 * time.Second})
		}
	})
}

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: cooldown, ProbeTTL: 10 * cooldown},
		memory.WithClock(clk))
	require.NoError(t, err)
	e := &env{clk: clk, breaker: b, gate: &countingGate{ProviderGate: b},
		pacer:   &fakePacer{held: map[string]int{}, throttled: map[string]int{}},
		sleeper: &fakeSleep{clk: clk}}
	cfg := retry.Config{
		Scope: config.ScopeSettings{Name: "CHAT", PollInterval: poll, StallWindow: window,
			Sources: []config.Source{{Name: "s1", Timeout: 10 * time.Second}, {Name: "s2", Timeout: 10 * time.Second}}},
		Breaker: e.gate,
		Pacer:   e.pacer,
		Clock:   clk,
		Sleep:   e.sleeper.sleep,
		Rand:    func() float64 { return 0 }, // sources in configuration order; backoff 0
		Logger:  slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	limits := map[string]gate.Limits{}
	for _, s := range cfg.Scope.Sources {
		limits[s.Name] = gate.Limits{MaxInFlight: 8, TPM: 1_000_000}
	}
	e.quota, err = memory.NewQuota(limits, memory.WithClock(clk))
	require.NoError(t, err)
	cfg.Quota = e.quota
	e.loop, err = retry.New(cfg)
	require.NoError(t, err)
	return e
}

func (e *env) open(t testing.TB, source string) {
	t.Helper()
	d, err := e.breaker.TryEnter(context.Background(), source)
	require.NoError(t, err)
	_, err = e.breaker.Record(context.Background(), source, d, gate.Failure)
	require.NoError(t, err)
}

func (e *env) snapshot(t testing.TB, source string) gate.Snapshot {
	t.Helper()
	s, err := e.breaker.Snapshot(context.Background(), source)
	require.NoError(t, err)
	return s
}

// requireNothingHeld checks every source's permit, pacer slot and probe lease
// went back.
func (e *env) requireNothingHeld(t testing.TB, sources ...string) {
	t.Helper()
	if len(sources) == 0 {
		sources = []string{"s1", "s2"}
	}
	for _, s := range sources {
		require.Zero(t, e.quota.InFlight(s), "permit of %s", s)
		require.Zero(t, e.pacer.get(e.pacer.held, s), "pacer slot of %s", s)
		require.Zero(t, e.snapshot(t, s).ProbesInFlight, "probe lease of %s", s)
	}
}

// script answers attempts per source from a queue of errors; an exhausted
// queue (or a nil entry) succeeds with "ok@source".
type script struct {
	mu    sync.Mutex
	errs  map[string][]error
	calls []string
}

func (s *script) attempt(_ context.Context, src config.Source) (string, transport.Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, src.Name)
	q := s.errs[src.Name]
	if len(q) > 0 {
		err := q[0]
		s.errs[src.Name] = q[1:]
		if err != nil {
			return "", transport.Usage{}, err
		}
	}
	return "ok@" + src.Name, transport.Usage{TotalTokens: 7}, nil
}

func (s *script) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func httpErr(status int, retryAfter time.Duration, msg string) error {
	return &errs.HTTPError{StatusCode: status, RetryAfter: retryAfter, Message: msg}
}

var errBoom = errors.New("connection reset by peer")

var _ admission.Pacing = (*fakePacer)(nil)

// hiRequest is the smallest chat request that can be sent: one user
// message.
func hiRequest() transport.ChatRequest {
	return transport.ChatRequest{Messages: []transport.Message{{Role: transport.RoleUser, Content: "hi"}}}
}
