package admission_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/errs"
)

// One admission round on a scope whose only source is open: with the default
// CIRCUIT_OPEN=fail_fast the call ends at once with the remaining cooldown.
func ExampleCall_OnNoRunnable() {
	breaker, _ := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1})
	adm, _ := admission.New(admission.Config{
		Scope:   "CHAT",
		Sources: []admission.Source{{Name: "only"}},
		Breaker: breaker,
	})
	ctx := context.Background()

	// A first call fails and opens the breaker.
	t, _, _ := adm.Pick(ctx, nil, 0)
	_ = t.Done(ctx, admission.Result{Outcome: gate.Failure})

	// The next call finds no runnable source.
	call := adm.NewCall(nil)
	t, rej, _ := call.Pick(ctx, 0)
	fmt.Println(t == nil, rej[0].Reason)
	err := call.OnNoRunnable(ctx, rej)
	var coe *errs.CircuitOpenError
	fmt.Println(errors.As(err, &coe), coe.RetryAfter > 0)
	// Output:
	// true circuit_open
	// true true
}
