package observe_test

import (
	"fmt"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
)

// An observer that cares only about breaker transitions embeds Nop, and sits
// behind Async so that it never slows a call.
type opens struct{ observe.Nop }

func (opens) ObserveStateChange(e observe.StateChange) {
	if e.To == gate.Open {
		fmt.Printf("%s/%s opened after %d failures in a row\n", e.Scope, e.Source, e.Counts.ConsecutiveFailures)
	}
}

func ExampleAsync() {
	a := observe.Async(opens{}, 256)
	// … hand a to the gateway (retry.Config.Observer, pgw's observer option) …
	a.ObserveStateChange(observe.StateChange{
		Scope: "CHAT", Source: "openai", From: gate.Closed, To: gate.Open,
		Counts: observe.Counts{Failures: 5, ConsecutiveFailures: 5},
	})
	a.Close() // drains the queue and stops the goroutine
	fmt.Println("dropped:", a.Dropped())
	// Output:
	// CHAT/openai opened after 5 failures in a row
	// dropped: 0
}
