package breaker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// The success path allocates nothing: not in the breaker, not in the default
// memory gate.
func TestSuccessPathAllocatesNothing(t *testing.T) {
	mem, err := New("mem", Config{Logger: discardLogger()})
	require.NoError(t, err)
	noop, err := New("noop", Config{Gate: gate.Noop{}, Logger: discardLogger()})
	require.NoError(t, err)
	ctx := context.Background()
	calls := 0
	for _, b := range []*Breaker{mem, noop} {
		t.Run(b.Name(), func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(1000, func() {
				_ = b.Execute(ctx, func(context.Context) error { calls++; return nil })
			}), "Execute")
			assert.Zero(t, testing.AllocsPerRun(1000, func() {
				_, _ = Do(ctx, b, func(context.Context) (int, error) { calls++; return calls, nil })
			}), "Do")
			wrapped := Wrap(b, succeed)
			assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = wrapped(ctx) }), "Wrap")
		})
	}
	assert.Positive(t, calls)
}

func BenchmarkExecuteSuccess(b *testing.B) {
	cb, err := New("bench", Config{Logger: discardLogger()})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = cb.Execute(ctx, succeed)
	}
}

func BenchmarkExecuteSuccessParallel(b *testing.B) {
	cb, err := New("bench", Config{Logger: discardLogger()})
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_ = cb.Execute(ctx, succeed)
		}
	})
}

func BenchmarkDoSuccess(b *testing.B) {
	cb, err := New("bench", Config{Logger: discardLogger()})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Do(ctx, cb, func(context.Context) (int, error) { return 1, nil })
	}
}

// BenchmarkExecuteRejected measures the Open path, which allocates its
// *OpenError.
func BenchmarkExecuteRejected(b *testing.B) {
	cb, err := New("bench", Config{Policy: gate.Policy{ConsecutiveFailures: 1}, Logger: discardLogger()})
	require.NoError(b, err)
	ctx := context.Background()
	_ = cb.Execute(ctx, fail)
	b.ReportAllocs()
	for b.Loop() {
		_ = cb.Execute(ctx, succeed)
	}
}

// BenchmarkExecuteSuccessNoopGate is the breaker's own overhead: the gate
// does nothing.
func BenchmarkExecuteSuccessNoopGate(b *testing.B) {
	cb, err := New("bench", Config{Gate: gate.Noop{}, Logger: discardLogger()})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = cb.Execute(ctx, succeed)
	}
}
