package pgw

import (
	"context"
	"errors"
	"sync"
)

// call is one governed call in flight, registered with its gateway so that
// Close can interrupt it and wait for it to give back what it holds.
type call struct {
	g      *GatewayClient
	caller context.Context // the caller's ctx
	ctx    context.Context // the call's: the caller's, also cancelled by Close
	stop   func() bool
	cancel context.CancelCauseFunc
	once   sync.Once
}

// enter registers a call, or returns ErrClosed.
func (g *GatewayClient) enter(ctx context.Context) (*call, error) {
	if ctx == nil {
		return nil, errors.New("pgw: nil context")
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return nil, ErrClosed
	}
	g.calls.Add(1)
	g.mu.RUnlock()
	cctx, cancel := context.WithCancelCause(ctx)
	c := &call{g: g, caller: ctx, ctx: cctx, cancel: cancel}
	c.stop = context.AfterFunc(g.life, func() { cancel(ErrClosed) })
	return c, nil
}

// end releases the call, once, and returns err — or ErrClosed when Close
// interrupted the call.
func (c *call) end(err error) error {
	err = public(c.closedErr(err))
	c.once.Do(func() {
		c.stop()
		c.cancel(nil)
		c.g.calls.Done()
	})
	return err
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
