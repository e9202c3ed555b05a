// Command breaker shows the standalone circuit breaker (package breaker) in a
// few seconds: a flaky upstream behind a breaker with a short cooldown goes
// closed → open → half_open → open (failed probe) → half_open → closed.
//
//	go run ./examples/breaker
//
// On a rejection the demo waits using the error's RetryAfter, which is how a
// caller should wait: the breaker says when it can certainly admit a call.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// upstream is healthy for its first 4 calls, then down for 4 (three that
// trip the breaker and one failed probe), then healthy again.
type upstream struct{ calls int }

var errUnavailable = errors.New("503 service unavailable")

func (u *upstream) call(context.Context) error {
	u.calls++
	if u.calls > 4 && u.calls <= 8 {
		return errUnavailable
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	const cooldown = 500 * time.Millisecond
	start := time.Now()
	stamp := func() string { return fmt.Sprintf("%5.2fs", time.Since(start).Seconds()) }

	cb, err := breaker.New("flaky-api", breaker.Config{
		Policy: gate.Policy{ConsecutiveFailures: 3, Cooldown: cooldown, CooldownMultiplier: 2},
		Logger: slog.New(slog.DiscardHandler), // the listener below prints instead
	})
	if err != nil {
		return err
	}
	cb.OnStateChange(func(ev breaker.StateChange) {
		why := ""
		switch {
		case ev.To == gate.Open && ev.From == gate.Closed:
			why = fmt.Sprintf("%d failures in a row; cooldown %v", ev.Metrics.ConsecutiveFailures, ev.Gate.Cooldown)
		case ev.To == gate.Open:
			why = fmt.Sprintf("the probe failed; cooldown grows to %v", ev.Gate.Cooldown)
		case ev.To == gate.HalfOpen:
			why = "cooldown over; this call is the probe"
		case ev.To == gate.Closed:
			why = "the probe succeeded"
		}
		fmt.Printf("%s  ── state %s → %s (%s)\n", stamp(), ev.From, ev.To, why)
	})

	fmt.Printf("breaker %q: opens after 3 failures in a row, cooldown %v, doubled after a failed probe\n\n", cb.Name(), cooldown)
	up := &upstream{}
	ctx := context.Background()
	for n := 1; up.calls < 12; n++ {
		err := cb.Execute(ctx, func(ctx context.Context) error {
			err := up.call(ctx)
			result := "ok"
			if err != nil {
				result = err.Error()
			}
			fmt.Printf("%s  call %2d  upstream: %s\n", stamp(), n, result)
			return err
		})
		var oe *breaker.OpenError
		switch {
		case errors.As(err, &oe):
			fmt.Printf("%s  call %2d  rejected without calling upstream: %s, retry after %v\n",
				stamp(), n, oe.State, oe.RetryAfter.Round(10*time.Millisecond))
			time.Sleep(waitAfter(oe.RetryAfter))
		case err != nil && !errors.Is(err, errUnavailable):
			return err
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}

	m := cb.Metrics()
	fmt.Printf("\n%d calls: %d succeeded, %d failed, %d rejected; state %s\n",
		m.TotalCalls, m.Successes, m.Failures, m.Rejections, m.State)
	return nil
}

// waitAfter waits half of a long RetryAfter, to show a second, shorter
// rejection, and all of a short one; the extra millisecond lands the next call
// just past the end of the cooldown.
func waitAfter(ra time.Duration) time.Duration {
	if ra > 300*time.Millisecond {
		return ra / 2
	}
	return ra + time.Millisecond
}
