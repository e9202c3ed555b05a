package pgw

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/pgw-go/pgw/internal/callctx"
)

// call is one governed call in flight, registered with its gateway so that
// Close can interrupt it and wait for it to give back what it holds.
type call struct {
	g      *GatewayClient
	caller context.Context // the caller's ctx
	ctx    context.Context // the call's: &cc
	cc     callctx.Ctx     // the caller's ctx, also ended by Close (cause ErrClosed)
	ended  atomic.Bool
}

// enter registers a call, or returns ErrClosed. The call's ctx is one
// allocation with the call: Close ends it through the gateway's set of live
// calls rather than through a hook on the gateway's own context per call.
func (g *GatewayClient) enter(ctx context.Context) (*call, error) {
	if ctx == nil {
		return nil, errors.New("pgw: nil context")
	}
	c := &call{g: g, caller: ctx}
	c.cc.Init(ctx, 0)
	c.ctx = &c.cc
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.cc.Stop()
		return nil, ErrClosed
	}
	g.calls.Add(1)
	g.live[c] = struct{}{}
	g.mu.Unlock()
	return c, nil
}

// end releases the call, once, and returns err — or ErrClosed when Close
// interrupted the call.
func (c *call) end(err error) error {
	err = public(c.closedErr(err))
	if c.ended.CompareAndSwap(false, true) {
		g := c.g
		g.mu.Lock()
		delete(g.live, c)
		g.mu.Unlock()
		c.cc.Stop()
		g.calls.Done()
	}
	return err
}

// interruptCalls ends the ctx of every live call with ErrClosed; Close
// calls it once closed is set, so no call registers after it.
func (g *GatewayClient) interruptCalls() {
	g.mu.RLock()
	live := make([]*call, 0, len(g.live))
	for c := range g.live {
		live = append(live, c)
	}
	g.mu.RUnlock()
	for _, c := range live {
		c.cc.Cancel(ErrClosed)
	}
}

// closedErr reports ErrClosed for an error of a call that Close interrupted
// (the caller's ctx live, the call's done, the gateway closed); any other
// error passes unchanged.
func (c *call) closedErr(err error) error {
	if err != nil && c.caller.Err() == nil && c.ctx.Err() != nil && c.g.isClosed() {
		return ErrClosed
	}
	return err
}

func (g *GatewayClient) isClosed() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.closed
}
