package callctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// alarm ends a Ctx at its deadline. Alarms are pooled with their timers: a
// stopped timer is reset for the next Ctx instead of a new one being made
// per attempt. An alarm whose timer fired is never reused, so a late ring
// can only reach the Ctx it was armed for, which has ended anyway.
type alarm struct {
	t   *time.Timer
	ctx atomic.Pointer[Ctx]
}

var alarms sync.Pool

func init() {
	// Set here, not in alarms' declaration: a ring ends a Ctx, which puts
	// the alarm back in the pool.
	alarms.New = func() any {
		a := &alarm{}
		a.t = time.AfterFunc(time.Hour, a.ring)
		a.t.Stop()
		return a
	}
}

func arm(c *Ctx, d time.Duration) *alarm {
	a := alarms.Get().(*alarm)
	a.ctx.Store(c)
	a.t.Reset(d)
	return a
}

func (a *alarm) ring() {
	if c := a.ctx.Load(); c != nil {
		c.cancel(context.DeadlineExceeded, context.DeadlineExceeded)
	}
}

// disarm stops the alarm and, unless it rang, pools it.
func (a *alarm) disarm() {
	if a.t.Stop() {
		a.ctx.Store(nil)
		alarms.Put(a)
	}
}
