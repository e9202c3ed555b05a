package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ErrUnreachable is matched (errors.Is) by every error this package returns
// because Redis could not be reached or could not serve: connection refused
// or reset, timeouts, a closed client, a cluster without quorum, a slot in
// migration (TRYAGAIN, ASK, MOVED) or a node loading, cut off or demoted
// (LOADING, MASTERDOWN, READONLY), or busy with another client's script
// (BUSY), once the short retry of such replies is spent; and a server that
// refuses every write (OOM, MISCONF, NOREPLICAS) or this client's
// credentials or rights (WRONGPASS, NOAUTH, NOPERM), at once. An error
// while the caller's own context is done is not wrapped in it: the caller
// gave up, which says nothing about Redis.
var ErrUnreachable = errors.New("pgw/gate/redis: redis is unreachable")

// UnreachableError is the concrete error behind ErrUnreachable: the gate
// operation that failed and the client's error.
type UnreachableError struct {
	// Op is the gate operation, named after the method or script that
	// failed: the breaker's "TryEnter", "Record", "RetryAfter", "Snapshot"
	// or "Force"; the quota's "Acquire", "Settle", "Release" or "Finish";
	// the combined "Admit" and "Conclude" of the gateway's calls; the
	// advertised budget's "Take", "Refresh" or "Read"; or "Preload" when
	// the scripts are loaded.
	Op string
	// Err is the go-redis error.
	Err error
}

// Error names the operation and says that Redis is unreachable.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("pgw/gate/redis: %s: redis is unreachable: %v", e.Op, e.Err)
}

// Unwrap returns the go-redis error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// wrapErr classifies err from a script run for op.
// deadlineSlack is how close to the caller's deadline an i/o timeout counts
// as that deadline (timer and scheduling granularity).
const deadlineSlack = 5 * time.Millisecond

// gaveUp reports whether the caller of a round trip that just failed gave
// up on it: ctx is done, or its deadline is within deadlineSlack, where
// go-redis's socket timer, set from that deadline, may fire before ctx
// says so.
func gaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < deadlineSlack
}

func wrapErr(ctx context.Context, op, source string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller gave up (go-redis may report it as an i/o timeout);
		// Redis may be fine, so this is no outage.
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("pgw/gate/redis: %s %q: %w", op, source, err)
		}
		return fmt.Errorf("pgw/gate/redis: %s %q: %w (%v)", op, source, ctxErr, err)
	}
	var nerr net.Error
	if dl, ok := ctx.Deadline(); ok && errors.As(err, &nerr) && nerr.Timeout() && time.Until(dl) < deadlineSlack {
		// go-redis sets the socket deadline from the caller's deadline
		// (ContextTimeoutEnabled), so its i/o timeout can fire a moment
		// before ctx reports done: that is the caller's deadline, not an
		// outage.
		return fmt.Errorf("pgw/gate/redis: %s %q: %w (%v)", op, source, context.DeadlineExceeded, err)
	}
	if notServed(err) {
		return &UnreachableError{Op: op, Err: err}
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		// The server answered with an error: a bug, not an outage.
		return fmt.Errorf("pgw/gate/redis: %s %q: script error: %w", op, source, err)
	}
	return &UnreachableError{Op: op, Err: err}
}
