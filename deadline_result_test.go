package pgw_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	pgwtest "github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
)

// A call its caller cancels ends as canceled; one whose caller's deadline
// passes first as deadline_exceeded — a call, and a chat stream whose
// deadline passes while it waits for its next chunk — and pgw_calls_total
// labels them so: the first is no failure of the call, the second is (the
// caller still wanted the answer), as observe/otel's call span says.
func TestACallersDeadlineIsReportedApartFromItsCancellation(t *testing.T) {
	up := pgwtest.NewUpstream(t)
	up.SetDefault(pgwtest.Chat, pgwtest.Reply{Chunks: []string{"a", "b"}, BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done() // the stream stays open after its first chunk
		}
	}})
	c := prom.New()
	obs := newCallSignal()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "RUN,CHAT", "RUN__SOURCES": "a", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": up.URL,
	}, pgw.WithObserver(observe.Multi(c, obs)))
	wait := func(actx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
		<-actx.Done()
		return 0, pgw.Usage{}, actx.Err()
	}

	ctx, cancel := context.WithCancel(context.Background())
	_, err := pgw.Call(ctx, gw, "RUN", func(actx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		cancel()
		return wait(actx, src)
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, pgw.ResultCanceled, obs.next(t, "the cancelled call").Result)

	late := newDeadlineCtx()
	_, err = pgw.Call(late, gw, "RUN", func(actx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		late.expire()
		return wait(actx, src)
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, pgw.ResultDeadlineExceeded, obs.next(t, "the call past its deadline").Result)

	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	late = newDeadlineCtx()
	st2, err := gw.ChatStream(late, hello())
	require.NoError(t, err)
	_, err = st2.Recv()
	require.NoError(t, err, "the first chunk")
	late.expire()
	for err == nil {
		_, err = st2.Recv()
	}
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.NoError(t, st2.Close())
	assert.Equal(t, pgw.ResultDeadlineExceeded, obs.next(t, "the stream past its deadline").Result)
	require.NoError(t, st.Close())
	assert.Equal(t, pgw.ResultAbandoned, obs.next(t, "the stream closed early").Result)

	want := `
# HELP pgw_calls_total Finished governed calls, by result.
# TYPE pgw_calls_total counter
pgw_calls_total{result="abandoned",scope="CHAT"} 1
pgw_calls_total{result="canceled",scope="RUN"} 1
pgw_calls_total{result="deadline_exceeded",scope="CHAT"} 1
pgw_calls_total{result="deadline_exceeded",scope="RUN"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "pgw_calls_total"))
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
