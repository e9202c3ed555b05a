package otel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/pgw-go/pgw"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// A call its caller cancels did not fail — the caller no longer wanted the
// answer: its span and its attempt's have no error status and no
// error.type, and its pgw.result is canceled, as pgw_calls_total labels it.
// A call whose caller's deadline passed first failed to deliver in time:
// both spans have status Error and error.type deadline_exceeded, its
// pgw.result.
func TestACallersCancellationIsNoErrorAndItsDeadlineIs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     func() (context.Context, func())
		wantErr error
		result  string
		status  codes.Code
		errType any
	}{
		{name: "canceled", ctx: func() (context.Context, func()) { return context.WithCancel(context.Background()) },
			wantErr: context.Canceled, result: pgw.ResultCanceled, status: codes.Unset},
		{name: "deadline", ctx: func() (context.Context, func()) { c := newDeadlineCtx(); return c, c.expire },
			wantErr: context.DeadlineExceeded, result: pgw.ResultDeadlineExceeded, status: codes.Error, errType: pgw.ResultDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, map[string]string{"PGW_SCOPES": "RUN", "RUN__SOURCES": "a"})
			ctx, end := tc.ctx()
			defer end()
			_, err := pgw.Call(ctx, r.gw, "RUN", func(actx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
				end() // once the attempt runs
				<-actx.Done()
				return 0, pgw.Usage{}, actx.Err()
			})
			require.True(t, errors.Is(err, tc.wantErr), "%v", err)

			byName := r.ended()
			require.Len(t, byName[pgwotel.SpanCall], 1)
			require.Len(t, byName[pgwotel.SpanAttempt], 1)
			call, att := byName[pgwotel.SpanCall][0], byName[pgwotel.SpanAttempt][0]
			assert.Equal(t, tc.result, attrs(call.Attributes)["pgw.result"])
			assert.Equal(t, pgw.OutcomeCanceled, attrs(att.Attributes)["pgw.outcome"])
			for _, s := range []struct {
				what  string
				code  codes.Code
				attrs map[string]any
			}{{"call", call.Status.Code, attrs(call.Attributes)}, {"attempt", att.Status.Code, attrs(att.Attributes)}} {
				assert.Equal(t, tc.status, s.code, s.what)
				assert.Equal(t, tc.errType, s.attrs["error.type"], s.what)
			}
		})
	}
}

// deadlineCtx is a context whose deadline passes when expire is called,
// not at an instant: a test says when without reading a clock.
type deadlineCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) expire() { c.once.Do(func() { close(c.done) }) }

func (c *deadlineCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
