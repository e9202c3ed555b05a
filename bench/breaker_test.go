package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// The in-process benchmarks compare one breaker guarding one upstream, in two
// styles each library offers:
//
//   - manual: ask, run, report — pgw's gate TryEnter + Record, gobreaker's
//     TwoStepCircuitBreaker Allow + done, failsafe-go's TryAcquirePermit +
//     RecordSuccess;
//   - execute: hand the breaker a function — pgw's breaker.Execute (the
//     gate until package breaker lands), gobreaker's Execute, failsafe-go's
//     executor Run.
//
// Leaves are named after the library so cmd/ratios can pair <group>/pgw with
// its peers.

const source = "upstream"

var errUpstream = errors.New("upstream failed")

// contender builds one library's breaker and returns a call through it. For
// the rejection benchmarks the breaker is opened first and the call must be
// rejected.
type contender struct {
	name string
	make func(b *testing.B, open bool) func() error
}

// longCooldown keeps an opened breaker open for the whole benchmark.
const longCooldown = time.Hour

var manual = []contender{
	{"pgw", func(b *testing.B, open bool) func() error {
		g, err := memory.NewBreaker(gate.Policy{Cooldown: longCooldown})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if open {
			d, _ := g.TryEnter(ctx, source)
			if _, err := g.Record(ctx, source, d, gate.Fatal); err != nil {
				b.Fatal(err)
			}
		}
		return func() error {
			d, err := g.TryEnter(ctx, source)
			if err != nil {
				return err
			}
			if !d.Allowed {
				return errRejected
			}
			_, err = g.Record(ctx, source, d, gate.Success)
			return err
		}
	}},
	{"gobreaker", func(b *testing.B, open bool) func() error {
		cb := gobreaker.NewTwoStepCircuitBreaker[any](gobreaker.Settings{Name: source, Timeout: longCooldown})
		if open {
			for range 6 { // gobreaker's default trips after more than 5 consecutive failures
				done, err := cb.Allow()
				if err != nil {
					b.Fatal(err)
				}
				done(errUpstream)
			}
		}
		return func() error {
			done, err := cb.Allow()
			if err != nil {
				return err
			}
			done(nil)
			return nil
		}
	}},
	{"failsafe", func(b *testing.B, open bool) func() error {
		cb := circuitbreaker.NewBuilder[any]().WithDelay(longCooldown).Build()
		if open {
			cb.Open()
		}
		return func() error {
			if !cb.TryAcquirePermit() {
				return circuitbreaker.ErrOpen
			}
			cb.RecordSuccess()
			return nil
		}
	}},
}

var execute = []contender{
	pgwExecute,
	{"gobreaker", func(b *testing.B, open bool) func() error {
		cb := gobreaker.NewCircuitBreaker[any](gobreaker.Settings{Name: source, Timeout: longCooldown})
		if open {
			for range 6 {
				_, _ = cb.Execute(func() (any, error) { return nil, errUpstream })
			}
		}
		fn := func() (any, error) { return nil, nil }
		return func() error {
			_, err := cb.Execute(fn)
			return err
		}
	}},
	{"failsafe", func(b *testing.B, open bool) func() error {
		cb := circuitbreaker.NewBuilder[any]().WithDelay(longCooldown).Build()
		if open {
			cb.Open()
		}
		exec := failsafe.With[any](cb)
		fn := func() error { return nil }
		return func() error { return exec.Run(fn) }
	}},
}

var errRejected = errors.New("rejected")

var styles = []struct {
	name       string
	contenders []contender
}{
	{"manual", manual},
	{"execute", execute},
}

// BenchmarkSuccessSerial: one goroutine, every call admitted and successful.
func BenchmarkSuccessSerial(b *testing.B) {
	for _, s := range styles {
		for _, c := range s.contenders {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				call := c.make(b, false)
				mustPass(b, call)
				b.ReportAllocs()
				for b.Loop() {
					_ = call()
				}
			})
		}
	}
}

// BenchmarkSuccessParallel: GOMAXPROCS goroutines on the same breaker, every
// call admitted and successful.
func BenchmarkSuccessParallel(b *testing.B) {
	for _, s := range styles {
		for _, c := range s.contenders {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				call := c.make(b, false)
				mustPass(b, call)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						_ = call()
					}
				})
			})
		}
	}
}

// BenchmarkOpenRejection: one goroutine, the breaker is open and every call is
// rejected without running.
func BenchmarkOpenRejection(b *testing.B) {
	for _, s := range styles {
		for _, c := range s.contenders {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				call := c.make(b, true)
				if call() == nil {
					b.Fatalf("%s: the opened breaker admitted a call", c.name)
				}
				b.ReportAllocs()
				for b.Loop() {
					_ = call()
				}
			})
		}
	}
}

func mustPass(b *testing.B, call func() error) {
	b.Helper()
	if err := call(); err != nil {
		b.Fatalf("a call through the closed breaker failed: %v", err)
	}
}
