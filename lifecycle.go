package pgw

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pgw-go/pgw/retry"
)

// call is one governed call in flight, registered with its gateway so that
// Close can interrupt it and wait for it to give back what it holds.
type call struct {
	g      *GatewayClient
	scope  string
	caller context.Context // the caller's ctx
	ctx    context.Context // the call's: the caller's, also cancelled by Close; carries callInfo
	info   *callInfo
	start  time.Time
	stop   func() bool
	cancel context.CancelCauseFunc
	once   sync.Once
}

// enter registers a call in scope, or returns ErrClosed.
func (g *GatewayClient) enter(ctx context.Context, scope string) (*call, error) {
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
	c := &call{g: g, scope: scope, caller: ctx, cancel: cancel, start: time.Now()}
	c.stop = context.AfterFunc(g.life, func() { cancel(ErrClosed) })
	c.ctx, c.info = withCallInfo(cctx, scope)
	return c, nil
}

// end releases the call, once, reporting its CallResult when result is not
// nil, and returns err — or ErrClosed when Close interrupted the call.
func (c *call) end(err error, result func(caller context.Context, err error) string) error {
	err = c.closedErr(err)
	c.once.Do(func() {
		if result != nil {
			c.g.rep.call(CallResult{
				Scope:    c.scope,
				Result:   result(c.caller, err),
				Source:   c.info.lastSource(),
				Attempts: int(c.info.attempts.Load()),
				Err:      err,
				Start:    c.start,
				Duration: time.Since(c.start),
			})
		}
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

// resultOf is the CallResult.Result of a call that ended with err.
func resultOf(caller context.Context, err error) string {
	var (
		be  *BatchError
		coe *CircuitOpenError
		ase *AllSourcesExhausted
		gue *GatewayUnavailableError
	)
	switch {
	case err == nil:
		return ResultSuccess
	case caller.Err() != nil:
		return ResultCanceled
	case errors.As(err, &be):
		return ResultError // a partial result: some parts failed
	case errors.As(err, &coe):
		return ResultCircuitOpen
	case errors.As(err, &ase):
		if ase.Reason == ReasonStalled {
			return ResultStalled
		}
		return ResultQuotaExhausted
	case errors.As(err, &gue):
		return ResultUnavailable
	case retry.Classify(err) == retry.CallerError:
		return ResultCallerError
	}
	return ResultError
}
