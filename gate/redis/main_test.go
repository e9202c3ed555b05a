package redis_test

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// quietLogger drops go-redis's own log lines (dial failures in the outage
// tests would flood the output).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestMain doubles as the entry point of the child processes of the
// multi-process tests: the test binary re-executes itself with childRole set.
func TestMain(m *testing.M) {
	goredis.SetLogger(quietLogger{})
	if role := os.Getenv(childRole); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}
