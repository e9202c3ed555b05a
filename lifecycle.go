package pgw

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/pgw-go/pgw/internal/callctx"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
)

// call is one governed call in flight, registered with its gateway so that
// Close can interrupt it and wait for it to give back what it holds.
type call struct {
	g     *GatewayClient
	cc    callctx.Ctx // the call's ctx: the caller's, also ended by Close (cause ErrClosed)
	ended atomic.Bool

	prev, next *call // in the gateway's list of live calls (liveMu)
}

// enter registers a call, or returns ErrClosed. The call's ctx is one
// allocation with the call: Close ends it through the gateway's list of live
// calls rather than through a hook on the gateway's own context per call.
func (g *GatewayClient) enter(ctx context.Context) (*call, error) {
	if ctx == nil {
		return nil, errors.New("pgw: nil context")
	}
	c := &call{}
	if err := g.register(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// plainCall is a Call's call with room for its first attempt, one
// allocation for the two.
type plainCall struct {
	call
	first retry.First
}

// enterPlain is enter for Call.
func (g *GatewayClient) enterPlain(ctx context.Context) (*plainCall, error) {
	if ctx == nil {
		return nil, errors.New("pgw: nil context")
	}
	c := &plainCall{}
	if err := g.register(ctx, &c.call); err != nil {
		return nil, err
	}
	return c, nil
}

// register starts c, a zero call, under ctx and adds it to g's live calls,
// or returns ErrClosed.
func (g *GatewayClient) register(ctx context.Context, c *call) error {
	c.g = g
	c.cc.Init(ctx, 0)
	g.liveMu.Lock()
	if g.shut {
		g.liveMu.Unlock()
		c.cc.Stop()
		return ErrClosed
	}
	c.next = g.live
	if g.live != nil {
		g.live.prev = c
	}
	g.live = c
	g.liveN++
	g.liveMu.Unlock()
	return nil
}

// end releases the call, once, and returns err — or ErrClosed when Close
// interrupted the call.
func (c *call) end(err error) error {
	err = public(c.closedErr(err))
	if c.ended.CompareAndSwap(false, true) {
		g := c.g
		g.liveMu.Lock()
		if c.prev != nil {
			c.prev.next = c.next
		} else {
			g.live = c.next
		}
		if c.next != nil {
			c.next.prev = c.prev
		}
		c.prev, c.next = nil, nil
		g.liveN--
		var last chan struct{} // Close is waiting for this call, the last
		if g.liveN == 0 {
			last, g.drained = g.drained, nil
		}
		g.liveMu.Unlock()
		c.cc.Stop()
		if last != nil {
			close(last)
		}
	}
	return err
}

// endOnPanic ends the call when it is still registered: deferred by the
// entry points, it releases a call cut short by a panic (in a transport or
// a user's function), which goes on to the caller. After end it does nothing.
func (c *call) endOnPanic() {
	if !c.ended.Load() {
		_ = c.end(nil)
	}
}

// interruptCalls stops calls from registering and ends the ctx of every
// live call with ErrClosed. Ending a ctx only wakes its call (nothing runs
// under liveMu but the list).
func (g *GatewayClient) interruptCalls() {
	var live []*call
	g.liveMu.Lock()
	g.shut = true
	for c := g.live; c != nil; c = c.next {
		live = append(live, c)
	}
	g.liveMu.Unlock()
	for _, c := range live {
		c.cc.Cancel(ErrClosed)
	}
}

// closedErr reports ErrClosed for an error of a call that Close interrupted:
// Close ended the call's ctx before anything else did (the caller's
// cancellation or deadline may come after, while the call winds down). The
// observer's "closed" follows the same rule, so the caller gets the error
// its CallResult reports. Any other error passes unchanged.
func (c *call) closedErr(err error) error {
	if err != nil && errs.ClosedBy(&c.cc) {
		return ErrClosed
	}
	return err
}

// waitCalls returns once no call is live; Close calls it after
// interruptCalls, so the count only goes down.
func (g *GatewayClient) waitCalls() {
	g.liveMu.Lock()
	if g.liveN == 0 {
		g.liveMu.Unlock()
		return
	}
	last := make(chan struct{})
	g.drained = last
	g.liveMu.Unlock()
	<-last
}
