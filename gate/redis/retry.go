package redis

import (
	"context"
	"errors"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// notHereNotNow lists the replies with which a reachable server says it
// cannot serve a command now, before running any of it: the slot is being
// migrated (TRYAGAIN, and ASK or MOVED left over once go-redis has used up
// its redirects), the cluster has no quorum, the server is still loading
// its data, a replica is cut off from its master, or a node was just
// demoted by a failover. None is a script error: such an operation is
// retried for a moment (runScript), then reported as ErrUnreachable so that
// fail_open serves locally.
var notHereNotNow = []string{"TRYAGAIN", "ASK ", "MOVED ", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY"}

// retryBudget bounds how long runScript retries a not-here-not-now reply:
// a slot migration of a few keys or a cluster failover ends within it, and a
// longer unavailability is an outage to serve around, not to wait out. The
// caller's deadline bounds it further.
const retryBudget = time.Second

// notServed reports whether err is a reply of notHereNotNow.
func notServed(err error) bool {
	var rerr goredis.Error
	if err == nil || !errors.As(err, &rerr) {
		return false
	}
	msg := strings.TrimPrefix(rerr.Error(), "ERR ")
	for _, p := range notHereNotNow {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// runScript runs s on c. A reply of notHereNotNow — the script did not run
// — is retried with a backoff from 1 ms doubling to 32 ms, for at most
// retryBudget and never past ctx's deadline; the last reply is returned when
// the budget or ctx ends first.
func runScript(ctx context.Context, c goredis.Scripter, s *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	cmd := s.Run(ctx, c, keys, args...)
	if !notServed(cmd.Err()) {
		return cmd
	}
	until := time.Now().Add(retryBudget)
	if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
		until = dl.Add(-deadlineSlack)
	}
	pause := time.Millisecond
	for {
		left := time.Until(until)
		if left <= 0 {
			return cmd
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return cmd
		case <-t.C:
		}
		cmd = s.Run(ctx, c, keys, args...)
		if !notServed(cmd.Err()) {
			return cmd
		}
		pause = min(2*pause, 32*time.Millisecond)
	}
}
