package callctx

import (
	"context"
	"sync"
	"time"
)

// Timeouts ends the Ctxs started on it (InitOn) at their deadlines, with
// one timer for all of them rather than a timer set and stopped per Ctx.
//
// Every Ctx on it has the same timeout, so their deadlines come in the
// order they start: a queue holds them, and the timer need only ring for
// the earliest. A Ctx that ends first leaves the queue without touching the
// timer, which stays set for a deadline that may have gone; when it rings,
// it ends the Ctxs whose deadlines have passed and is set for the next one,
// or left unset when the queue is empty. Under steady traffic the timer
// rings about once per timeout, whatever the number of Ctxs.
//
// Goroutines that read the clock and then start their Ctxs may do so out of
// order by the moments in between: a Ctx queued behind one that started a
// moment later ends when that one does, late by that moment.
type Timeouts struct {
	d     time.Duration
	epoch time.Time // deadlines count from it, in ns

	mu   sync.Mutex
	ring []queued // a power of two long; seq&(len-1) is where seq is
	head uint32   // seq of the oldest queued (or left) Ctx
	tail uint32   // seq of the next Ctx to queue
	live int      // Ctxs queued between head and tail (the others left)
	t    *time.Timer
	set  bool // t is set, for the deadline at or before the earliest queued
}

// queued is one Ctx in the queue, with its deadline; c nil: it left.
type queued struct {
	c  *Ctx
	dl int64 // since epoch
}

// NewTimeouts returns the Timeouts of the timeout d > 0.
func NewTimeouts(d time.Duration) *Timeouts {
	if d <= 0 {
		panic("callctx: NewTimeouts with a timeout ≤ 0")
	}
	q := &Timeouts{d: d, epoch: time.Now(), ring: make([]queued, 8)}
	q.t = time.AfterFunc(time.Hour, q.ring1)
	q.t.Stop()
	return q
}

// Timeout is the timeout of q's Ctxs.
func (q *Timeouts) Timeout() time.Duration { return q.d }

// add queues c, whose deadline c.dl is q's timeout from its start.
func (q *Timeouts) add(c *Ctx) {
	dl := int64(c.dl.Sub(q.epoch))
	q.mu.Lock()
	if int(q.tail-q.head) == len(q.ring) {
		q.makeRoom()
	}
	c.seq = q.tail
	q.ring[q.tail&uint32(len(q.ring)-1)] = queued{c: c, dl: dl}
	q.tail++
	q.live++
	if !q.set {
		q.set = true
		q.t.Reset(time.Duration(dl) - time.Since(q.epoch))
	}
	q.mu.Unlock()
}

// leave takes c out of the queue, if it is there.
func (q *Timeouts) leave(c *Ctx) {
	q.mu.Lock()
	mask := uint32(len(q.ring) - 1)
	if s := c.seq; s-q.head < q.tail-q.head && q.ring[s&mask].c == c {
		q.ring[s&mask].c = nil
		q.live--
		for q.head != q.tail && q.ring[q.head&mask].c == nil {
			q.head++
		}
	}
	q.mu.Unlock()
}

// makeRoom, when the ring is full, packs the queued Ctxs at its start or,
// when more than half of it is queued, doubles it. Under q.mu.
func (q *Timeouts) makeRoom() {
	n := len(q.ring)
	if q.live > n/2 {
		n *= 2
	}
	ring := make([]queued, n)
	mask, old := uint32(n-1), uint32(len(q.ring)-1)
	seq := q.head
	for s := q.head; s != q.tail; s++ {
		e := q.ring[s&old]
		if e.c == nil {
			continue
		}
		e.c.seq = seq
		ring[seq&mask] = e
		seq++
	}
	q.ring, q.tail = ring, seq
}

// ring1 is the timer's: it ends the Ctxs whose deadlines have passed and
// sets the timer for the next.
func (q *Timeouts) ring1() {
	for {
		q.mu.Lock()
		now := int64(time.Since(q.epoch))
		mask := uint32(len(q.ring) - 1)
		var due *Ctx
		for q.head != q.tail {
			e := &q.ring[q.head&mask]
			if e.c == nil {
				q.head++
				continue
			}
			if e.dl > now {
				q.t.Reset(time.Duration(e.dl - now))
				q.mu.Unlock()
				return
			}
			due = e.c
			e.c = nil
			q.live--
			q.head++
			break
		}
		if due == nil {
			q.set = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		due.cancel(context.DeadlineExceeded, context.DeadlineExceeded)
	}
}
