package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// bareTracer is a ContextObserver and nothing more: none of the optional
// event methods (attempt starts, rejections, waits, call results).
type bareTracer struct {
	calls, attempts, endedAttempts, endedCalls int
}

func (*bareTracer) ObserveAttempt(pgw.AttemptRecord)   {}
func (*bareTracer) ObserveStateChange(pgw.StateChange) {}
func (b *bareTracer) StartCall(ctx context.Context, _ observe.CallStart) context.Context {
	b.calls++
	return ctx
}
func (b *bareTracer) StartAttempt(ctx context.Context, _ observe.AttemptStart) context.Context {
	b.attempts++
	return ctx
}
func (b *bareTracer) EndAttempt(context.Context, observe.AttemptRecord) { b.endedAttempts++ }
func (*bareTracer) EndWait(context.Context, observe.WaitEnd)            {}
func (b *bareTracer) EndCall(context.Context, observe.CallResult)       { b.endedCalls++ }

// A ContextObserver given to WithObserver follows every call and attempt
// even when it implements none of the optional event methods. Before, the
// gateway wrapped it in an adapter that hid its StartCall and the rest:
// such a tracer saw nothing.
func TestAContextObserverThatImplementsNothingElseFollowsEachCall(t *testing.T) {
	tr := &bareTracer{}
	gw, _ := newGateway(t, map[string]string{"CHAT__SOURCES": "a"},
		pgw.WithChatTransport(&ctxChat{eof: true}), pgw.WithObserver(tr))
	_, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, bareTracer{calls: 1, attempts: 1, endedAttempts: 1, endedCalls: 1}, *tr)
}
