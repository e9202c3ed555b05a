package callctx

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errBoom = errors.New("boom")

func TestTheCancelKeyIsFound(t *testing.T) {
	require.NotNil(t, cancelKey, errNoKey.Error())
}

func TestALiveCtxHasNoErrAndNoCause(t *testing.T) {
	c := New(context.Background(), 0)
	defer c.Stop()
	assert.NoError(t, c.Err())
	assert.NoError(t, context.Cause(c))
	select {
	case <-c.Done():
		t.Fatal("done before it ended")
	default:
	}
}

func TestCancelReportsCanceledAndItsCause(t *testing.T) {
	c := New(context.Background(), 0)
	done := c.Done()
	c.Cancel(errBoom)
	<-done
	assert.ErrorIs(t, c.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(c), errBoom)
	c.Cancel(errors.New("later")) // the first end counts
	assert.ErrorIs(t, context.Cause(c), errBoom)
}

func TestStopReportsCanceled(t *testing.T) {
	c := New(context.Background(), time.Hour)
	c.Stop()
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, context.Canceled, context.Cause(c))
}

func TestTheDeadlineEndsTheCtxWithDeadlineExceeded(t *testing.T) {
	c := New(context.Background(), time.Millisecond)
	defer c.Stop()
	dl, ok := c.Deadline()
	require.True(t, ok)
	assert.False(t, dl.IsZero())
	<-c.Done()
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
}

func TestAnEarlierParentDeadlineIsTheCtxs(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := New(parent, time.Hour)
	defer c.Stop()
	pdl, _ := parent.Deadline()
	dl, ok := c.Deadline()
	assert.True(t, ok)
	assert.Equal(t, pdl, dl)
	assert.Nil(t, c.rare, "the parent's deadline comes first: no timer of its own")
}

func TestAStandardParentsEndEndsTheCtxWithItsCause(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	c := New(parent, time.Hour)
	defer c.Stop()
	cancel(errBoom)
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, errBoom, context.Cause(c))
}

func TestAnEndedParentEndsTheCtxAtOnce(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	c := New(parent, time.Hour)
	assert.Equal(t, context.Canceled, c.Err())
	assert.True(t, c.rare == nil || c.rare.alarm == nil)
	pc := New(context.Background(), 0)
	pc.Cancel(errBoom)
	k := New(pc, time.Hour)
	assert.Equal(t, context.Canceled, k.Err())
	assert.Equal(t, errBoom, context.Cause(k))
}

func TestACtxParentEndsItsChildrenWithItsCause(t *testing.T) {
	call := New(context.Background(), 0)
	a := New(call, time.Hour)
	b := New(call, time.Hour) // a second child: a hedged attempt
	call.Cancel(errBoom)
	for _, k := range []*Ctx{a, b} {
		<-k.Done()
		assert.Equal(t, context.Canceled, k.Err())
		assert.Equal(t, errBoom, context.Cause(k))
	}
}

func TestAStoppedChildLeavesItsParent(t *testing.T) {
	call := New(context.Background(), 0)
	defer call.Stop()
	a := New(call, time.Hour)
	b := New(call, time.Hour)
	a.Stop()
	b.Stop()
	assert.Nil(t, call.kid.Load())
	assert.Empty(t, call.rare.kids)
	assert.NoError(t, call.Err(), "a child's end does not end its parent")
}

func TestACtxWrappedInValuesStillEndsItsChild(t *testing.T) {
	type k struct{}
	call := New(context.Background(), 0)
	wrapped := context.WithValue(call, k{}, "span")
	a := New(wrapped, time.Hour)
	assert.Same(t, call, a.up, "registered with the Ctx under the value, not through a hook")
	assert.Equal(t, "span", a.Value(k{}))
	call.Cancel(errBoom)
	<-a.Done()
	assert.Equal(t, errBoom, context.Cause(a))
}

func TestStandardChildrenEndWithTheCtxAndLearnItsCause(t *testing.T) {
	c := New(context.Background(), 0)
	child, cancel := context.WithCancelCause(c)
	defer cancel(nil)
	tctx, tcancel := context.WithTimeout(c, time.Hour)
	defer tcancel()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	c.Cancel(errBoom)
	<-child.Done()
	<-tctx.Done()
	<-ran
	assert.Equal(t, context.Canceled, child.Err())
	assert.Equal(t, errBoom, context.Cause(child))
	assert.Equal(t, errBoom, context.Cause(tctx))
}

func TestAStandardChildThatEndsFirstUnregisters(t *testing.T) {
	c := New(context.Background(), 0)
	defer c.Stop()
	child, cancel := context.WithCancel(c)
	require.NotNil(t, c.f0.f)
	cancel()
	<-child.Done()
	assert.Nil(t, c.f0.f)
	assert.Nil(t, c.rare)
	assert.NoError(t, c.Err())
}

func TestValuesComeFromTheParent(t *testing.T) {
	type k struct{}
	c := New(context.WithValue(context.Background(), k{}, 7), 0)
	defer c.Stop()
	assert.Equal(t, 7, c.Value(k{}))
	assert.Nil(t, c.Value("absent"))
}

func TestWithoutCancelDropsTheEndButKeepsValues(t *testing.T) {
	type k struct{}
	c := New(context.WithValue(context.Background(), k{}, 7), 0)
	c.Stop()
	w := context.WithoutCancel(c)
	assert.NoError(t, w.Err())
	assert.Nil(t, w.Done())
	assert.Equal(t, 7, w.Value(k{}))
}

func TestACtxUnderACtxStartsNoGoroutine(t *testing.T) {
	call := New(context.Background(), 0)
	before := runtime.NumGoroutine()
	for range 100 {
		a := New(call, time.Hour)
		child, cancel := context.WithCancel(a)
		a.Stop()
		<-child.Done()
		cancel()
	}
	call.Stop()
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+1)
}

func TestChildrenRegisteringWhileTheParentEndsAllEnd(t *testing.T) {
	for range 50 {
		call := New(context.Background(), 0)
		kids := make(chan *Ctx, 8)
		start := make(chan struct{})
		for range 8 {
			go func() {
				<-start
				kids <- New(call, time.Hour)
			}()
		}
		close(start)
		call.Cancel(errBoom)
		for range 8 {
			k := <-kids
			<-k.Done()
			assert.Equal(t, errBoom, context.Cause(k))
			k.Stop()
		}
	}
}

func TestAfterFuncOnAnEndedCtxRunsOutsideTheCallersLocks(t *testing.T) {
	c := New(context.Background(), 0)
	c.Stop()
	var mu sync.Mutex
	ran := make(chan struct{})
	mu.Lock() // as the standard library holds its child's lock while registering
	stop := c.AfterFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		close(ran)
	})
	mu.Unlock()
	<-ran
	assert.False(t, stop())
}
