package callctx

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queued reports how many Ctxs q holds, and the span of its ring in use.
func (q *Timeouts) queued() (live, span, size int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.live, int(q.tail - q.head), len(q.ring)
}

func onTimeouts(parent context.Context, q *Timeouts) *Ctx {
	c := &Ctx{}
	c.InitOn(parent, time.Now(), q)
	return c
}

func TestCtxsOnTimeoutsEndAtTheirDeadlines(t *testing.T) {
	q := NewTimeouts(5 * time.Millisecond)
	var cs []*Ctx
	for range 3 {
		cs = append(cs, onTimeouts(context.Background(), q))
	}
	for _, c := range cs {
		<-c.Done()
		dl, ok := c.Deadline()
		require.True(t, ok)
		assert.False(t, time.Now().Before(dl), "ended before its deadline")
		assert.Equal(t, context.DeadlineExceeded, c.Err())
		assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	}
	live, span, _ := q.queued()
	assert.Zero(t, live)
	assert.Zero(t, span)
}

func TestATimerSetForACtxThatLeftStillEndsTheNext(t *testing.T) {
	q := NewTimeouts(20 * time.Millisecond)
	first := onTimeouts(context.Background(), q) // the timer is set for its deadline
	first.Stop()
	next := &Ctx{} // started a moment later: its deadline is later
	next.InitOn(context.Background(), time.Now().Add(time.Millisecond), q)
	<-next.Done()
	dl, _ := next.Deadline()
	assert.False(t, time.Now().Before(dl), "ended at the deadline of the Ctx that left")
	assert.Equal(t, context.DeadlineExceeded, next.Err())
	assert.Equal(t, context.Canceled, first.Err())
}

func TestACtxThatEndsFirstLeavesTheQueue(t *testing.T) {
	q := NewTimeouts(time.Hour)
	call := New(context.Background(), 0)
	a := onTimeouts(call, q)
	b := onTimeouts(context.Background(), q)
	live, _, _ := q.queued()
	require.Equal(t, 2, live)
	b.Cancel(errBoom)
	call.Cancel(errBoom) // ends a through its parent
	<-a.Done()
	assert.Equal(t, errBoom, context.Cause(a))
	live, span, _ := q.queued()
	assert.Zero(t, live)
	assert.Zero(t, span)
}

func TestAnEarlierParentDeadlineQueuesNothing(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := NewTimeouts(time.Hour)
	c := onTimeouts(parent, q)
	defer c.Stop()
	pdl, _ := parent.Deadline()
	dl, _ := c.Deadline()
	assert.Equal(t, pdl, dl)
	live, _, _ := q.queued()
	assert.Zero(t, live)
}

func TestAnEndedParentQueuesNothing(t *testing.T) {
	q := NewTimeouts(time.Hour)
	parent := New(context.Background(), 0)
	parent.Stop()
	c := onTimeouts(parent, q)
	assert.Equal(t, context.Canceled, c.Err())
	live, span, _ := q.queued()
	assert.Zero(t, live)
	assert.Zero(t, span)
}

// A Ctx that lives long at the head of the queue (a stream) does not make
// the ring grow with every short Ctx that came and went behind it.
func TestALongLivedCtxDoesNotGrowTheRing(t *testing.T) {
	q := NewTimeouts(time.Hour)
	long := onTimeouts(context.Background(), q)
	for range 100_000 {
		onTimeouts(context.Background(), q).Stop()
	}
	live, _, size := q.queued()
	assert.Equal(t, 1, live)
	assert.LessOrEqual(t, size, 16)
	long.Stop()
	live, span, _ := q.queued()
	assert.Zero(t, live)
	assert.Zero(t, span)
}

// Ctxs that end out of order, many live at once: the ring grows and packs,
// and each Ctx still leaves, with its place kept right through both.
func TestCtxsLeavingOutOfOrderKeepTheirPlaces(t *testing.T) {
	q := NewTimeouts(time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	var live []*Ctx
	for i := range 20_000 {
		live = append(live, onTimeouts(context.Background(), q))
		if i%3 != 0 && len(live) > 0 {
			j := rng.IntN(len(live))
			live[j].Stop()
			live = append(live[:j], live[j+1:]...)
		}
	}
	n, _, _ := q.queued()
	require.Equal(t, len(live), n)
	for _, c := range live {
		q.mu.Lock()
		e := q.ring[c.seq&uint32(len(q.ring)-1)]
		q.mu.Unlock()
		require.Same(t, c, e.c, "a Ctx's place in the ring")
	}
	for _, c := range live {
		c.Stop()
	}
	n, span, _ := q.queued()
	assert.Zero(t, n)
	assert.Zero(t, span)
}

func TestTimeoutsUnderConcurrentUse(t *testing.T) {
	q := NewTimeouts(2 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				c := onTimeouts(context.Background(), q)
				if (g+i)%4 == 0 {
					<-c.Done() // some reach their deadline
					assert.Equal(t, context.DeadlineExceeded, c.Err())
				}
				c.Stop()
			}
		})
	}
	wg.Wait()
	live, span, _ := q.queued()
	assert.Zero(t, live)
	assert.Zero(t, span)
}

func TestNewTimeoutsRefusesATimeoutOfZero(t *testing.T) {
	assert.Panics(t, func() { NewTimeouts(0) })
}
