package errs

import (
	"context"
	"errors"
)

// ErrClosed is pgw.ErrClosed: the error of a call made after the gateway's
// Close, or that Close interrupted. Close ends the ctx of every call in
// flight with it as the cause, which is how the lower packages tell an
// interruption by Close from the caller's own cancellation.
var ErrClosed = errors.New("pgw: gateway client is closed")

// ClosedBy reports whether ctx ended because the gateway's Close ended it
// (its cause is ErrClosed), not because of the caller's cancellation or
// deadline.
func ClosedBy(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrClosed)
}
