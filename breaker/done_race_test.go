package breaker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// endsAfterFirstLook is a ctx that its caller cancels at once after the
// breaker first asked it: live for the breaker's own look, done by the time
// the gate asks.
type endsAfterFirstLook struct {
	context.Context
	looks atomic.Int32
}

func (c *endsAfterFirstLook) Err() error {
	if c.looks.Add(1) > 1 {
		return context.Canceled
	}
	return nil
}

// A caller that gives up while the breaker asks its gate is a cancelled
// call, as one whose ctx was done before: the gate's refusal of the done ctx
// is not a gate error (which would read as the gate's store failing), and
// the function does not run.
func TestCancellationDuringTheGatesAnswerIsCancelledNotAGateError(t *testing.T) {
	for _, how := range []string{"Execute", "Allow"} {
		t.Run(how, func(t *testing.T) {
			b, err := breaker.New("racing", breaker.Config{Logger: quiet(), Policy: gate.Policy{ConsecutiveFailures: 1}})
			require.NoError(t, err)
			ctx := &endsAfterFirstLook{Context: context.Background()}
			ran := false
			if how == "Execute" {
				err = b.Execute(ctx, func(context.Context) error { ran = true; return nil })
			} else {
				var tok *breaker.Token
				tok, err = b.Allow(ctx)
				assert.Nil(t, tok)
			}
			require.ErrorIs(t, err, context.Canceled)
			var oe *breaker.OpenError
			assert.NotErrorAs(t, err, &oe)
			assert.False(t, ran, "the function does not run")
			m := b.Metrics()
			assert.Equal(t, uint64(1), m.Cancelled, "a cancelled call")
			assert.Zero(t, m.GateErrors, "not a gate error")
			assert.Equal(t, uint64(1), m.TotalCalls)
			assert.Equal(t, gate.Closed, b.State())
		})
	}
}
