package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
)

var errUnavailable = errors.New("503 service unavailable")

func ExampleBreaker_Execute() {
	clock := contracttest.NewFakeClock() // a real program leaves Clock nil
	cb, err := breaker.New("payments", breaker.Config{
		Policy: gate.Policy{ConsecutiveFailures: 2, Cooldown: time.Minute},
		Clock:  clock,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	charge := func(ctx context.Context) error { return errUnavailable }

	for i := 1; i <= 3; i++ {
		err := cb.Execute(ctx, charge)
		if oe, ok := errors.AsType[*breaker.OpenError](err); ok {
			fmt.Printf("call %d: rejected, %s, retry after %v\n", i, oe.Code(), oe.RetryAfter)
			continue
		}
		fmt.Printf("call %d: %v\n", i, err)
	}
	// Output:
	// call 1: 503 service unavailable
	// call 2: 503 service unavailable
	// call 3: rejected, PGW-CB-OPEN, retry after 1m0s
}

func ExampleDo() {
	cb, err := breaker.New("search", breaker.Config{})
	if err != nil {
		panic(err)
	}
	hits, err := breaker.Do(context.Background(), cb, func(ctx context.Context) ([]string, error) {
		return []string{"a", "b"}, nil
	})
	fmt.Println(hits, err, cb.Metrics().Successes)
	// Output: [a b] <nil> 1
}

func ExampleWrap() {
	cb, err := breaker.New("mailer", breaker.Config{})
	if err != nil {
		panic(err)
	}
	send := breaker.Wrap(cb, func(ctx context.Context) error { return nil })
	fmt.Println(send(context.Background()))
	// Output: <nil>
}

func ExampleRegistry_GetOrCreate() {
	reg := breaker.NewRegistry()
	// Two places asking for "inventory" share one breaker.
	a, err := reg.GetOrCreate("inventory", breaker.Config{Policy: gate.Policy{ConsecutiveFailures: 3}})
	if err != nil {
		panic(err)
	}
	b, _ := reg.GetOrCreate("inventory", breaker.Config{})
	fmt.Println(a == b, reg.Names())
	// Output: true [inventory]
}

func ExampleBreaker_Allow() {
	cb, err := breaker.New("ocr", breaker.Config{})
	if err != nil {
		panic(err)
	}
	tok, err := cb.Allow(context.Background())
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	callErr := errUnavailable // the outcome of a call made outside a closure
	tok.Done(callErr)
	tok.Done(nil) // a second Done is ignored
	m := cb.Metrics()
	fmt.Println(m.Failures, m.Successes)
	// Output: 1 0
}

func ExampleBreaker_OnStateChange() {
	clock := contracttest.NewFakeClock()
	cb, err := breaker.New("llm", breaker.Config{
		Policy: gate.Policy{ConsecutiveFailures: 1, Cooldown: 5 * time.Second},
		Clock:  clock,
	})
	if err != nil {
		panic(err)
	}
	cb.OnStateChange(func(ev breaker.StateChange) {
		fmt.Printf("%d: %s → %s after %d failures\n", ev.Seq, ev.From, ev.To, ev.Metrics.Failures)
	})
	ctx := context.Background()
	_ = cb.Execute(ctx, func(context.Context) error { return errUnavailable })
	clock.Advance(5 * time.Second)
	_ = cb.Execute(ctx, func(context.Context) error { return nil })
	// Output:
	// 1: closed → open after 1 failures
	// 2: open → half_open after 1 failures
	// 3: half_open → closed after 1 failures
}
