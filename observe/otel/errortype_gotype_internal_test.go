package otel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A wait given up on an error that has no code names the Go type that says
// what failed, not the fmt.Errorf wrapper around it, and the conventions'
// _OTHER when the whole chain is text.
func TestWaitErrorTypeOfAnUncodedErrorIsItsTellingGoType(t *testing.T) {
	ctx := context.Background()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	gate := fmt.Errorf("pgw/admission: scope %q: breaker gate of source %q: %w", "CHAT", "a", dial)
	assert.Equal(t, "*net.OpError", errorType(ctx, gate))
	assert.Equal(t, "*net.OpError", errorType(ctx, dial))
	text := fmt.Errorf("pgw/admission: scope %q: quota gate of source %q: %w", "CHAT", "a", errors.New("pgw/gate/redis: redis is unreachable"))
	assert.Equal(t, "_OTHER", errorType(ctx, text))
	assert.Equal(t, "_OTHER", errorType(ctx, errors.New("boom")))
	assert.Equal(t, "canceled", errorType(ctx, fmt.Errorf("x: %w", context.Canceled)))
}
