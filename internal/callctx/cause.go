package callctx

import (
	"context"
	"errors"
)

// cancelKey is the key under which the standard library's contexts find
// their nearest cancel context; context.Cause reads the cause from it. It is
// not exported, so it is learnt once by asking context.Cause about a context
// that records the key it is asked for. Were that ever to find nothing, a
// Ctx would let its parent answer, and Cause would report the parent's cause
// (or Err) instead of a Ctx's own.
var cancelKey = func() any {
	var spy keySpy
	_ = context.Cause(&spy)
	return spy.key
}()

type keySpy struct {
	context.Context
	key any
}

func (s *keySpy) Value(key any) any {
	if s.key == nil {
		s.key = key
	}
	return nil
}

func (s *keySpy) Err() error { return context.Canceled } // Cause asks only an ended context

// carriers are the cancel contexts of the causes every attempt ends with,
// made once: an attempt that ends normally or times out allocates nothing
// for context.Cause.
var (
	canceledCarrier = carrier(context.Canceled)
	deadlineCarrier = carrier(context.DeadlineExceeded)
)

// causeCarrier returns a cancelled standard cancel context whose cause is
// cause, in the form context.Cause expects behind cancelKey.
func causeCarrier(cause error) any {
	switch {
	case cause == context.Canceled:
		return canceledCarrier
	case cause == context.DeadlineExceeded:
		return deadlineCarrier
	}
	return carrier(cause)
}

func carrier(cause error) any {
	if cancelKey == nil {
		return nil
	}
	cc, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return cc.Value(cancelKey)
}

// errNoKey is reported by tests when the key could not be learnt.
var errNoKey = errors.New("callctx: the standard library's cancel key was not found")
