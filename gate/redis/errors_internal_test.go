package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// go-redis's i/o timeout can beat the caller's context to its own deadline by
// a hair; that is the caller's deadline, never a Redis outage.
func TestTimeoutAtTheCallersDeadlineIsNoOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := wrapErr(ctx, "try_enter", "s", timeoutErr{})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.Is(err, ErrUnreachable))

	far, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err = wrapErr(far, "try_enter", "s", timeoutErr{})
	assert.ErrorIs(t, err, ErrUnreachable, "a read timeout long before the deadline is an outage")
}
