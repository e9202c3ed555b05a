package breaker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

var errBoom = errors.New("upstream 503")

// newTestBreaker returns a breaker on a memory gate driven by a fake clock,
// the gate wrapped in a ledger that checks every admitted call is recorded.
func newTestBreaker(t *testing.T, p gate.Policy, cfg Config) (*Breaker, *contracttest.FakeClock, *ledger) {
	t.Helper()
	clk := contracttest.NewFakeClock()
	mem, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	l := &ledger{ProviderGate: mem, open: map[uint64]int{}}
	cfg.Gate = l
	cfg.Logger = discardLogger()
	b, err := New("api", cfg)
	require.NoError(t, err)
	// The breaker timestamps changes with the wall clock when Gate is set;
	// tests want the fake one.
	b.clock = clk
	b.tally = newTally(cfg.Interval, cfg.CountWindow, clk)
	t.Cleanup(func() { l.requireAllRecorded(t) })
	return b, clk, l
}

// ledger wraps a gate and remembers every allowed decision until it is
// recorded: a decision recorded twice or never is a leaked or doubled
// permit.
type ledger struct {
	gate.ProviderGate
	mu       sync.Mutex
	open     map[uint64]int // key: entry number
	entries  uint64
	byToken  map[decisionKey][]uint64
	outcomes []gate.Outcome
	doubled  int
}

type decisionKey struct {
	probe bool
	token uint64
}

func (l *ledger) TryEnter(ctx context.Context, source string) (gate.Decision, error) {
	d, err := l.ProviderGate.TryEnter(ctx, source)
	if err == nil && d.Allowed {
		l.mu.Lock()
		l.entries++
		if l.byToken == nil {
			l.byToken = map[decisionKey][]uint64{}
		}
		k := decisionKey{d.Probe, d.Token}
		l.byToken[k] = append(l.byToken[k], l.entries)
		l.open[l.entries] = 1
		l.mu.Unlock()
	}
	return d, err
}

func (l *ledger) Record(ctx context.Context, source string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if d.Allowed {
		l.mu.Lock()
		k := decisionKey{d.Probe, d.Token}
		if ids := l.byToken[k]; len(ids) > 0 {
			delete(l.open, ids[0])
			l.byToken[k] = ids[1:]
		} else {
			l.doubled++
		}
		l.outcomes = append(l.outcomes, o)
		l.mu.Unlock()
	}
	return l.ProviderGate.Record(ctx, source, d, o)
}

// recorded returns the outcomes recorded so far.
func (l *ledger) recorded() []gate.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]gate.Outcome(nil), l.outcomes...)
}

func (l *ledger) requireAllRecorded(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.open, "admitted calls never recorded")
	require.Zero(t, l.doubled, "admitted calls recorded twice")
}

// scriptGate answers from fields the test sets; for the observation and
// gate-error tests.
type scriptGate struct {
	mu       sync.Mutex
	decision gate.Decision
	update   gate.Update
	snap     gate.Snapshot
	enterErr error
	recErr   error
	snaps    int
}

func (s *scriptGate) TryEnter(context.Context, string) (gate.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decision, s.enterErr
}

func (s *scriptGate) Record(context.Context, string, gate.Decision, gate.Outcome) (gate.Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.update, s.recErr
}

func (s *scriptGate) RetryAfter(context.Context, []string) (time.Duration, error) { return 0, nil }

func (s *scriptGate) Snapshot(context.Context, string) (gate.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps++
	return s.snap, nil
}

func (s *scriptGate) set(f func(s *scriptGate)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func fail(context.Context) error    { return errBoom }
func succeed(context.Context) error { return nil }

// trip drives b from Closed to Open with n failures.
func trip(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for range n {
		require.ErrorIs(t, b.Execute(t.Context(), fail), errBoom)
	}
	require.Equal(t, gate.Open, b.State())
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Force passes an override to the wrapped gate.
func (l *ledger) Force(ctx context.Context, source string, f gate.Force) error {
	return l.ProviderGate.(gate.Forcer).Force(ctx, source, f)
}
