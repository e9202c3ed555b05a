package redis

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// notHereNotNow lists the replies with which a reachable server says it
// cannot serve a command now, before running any of it: the slot is being
// migrated (TRYAGAIN, and ASK or MOVED left over once go-redis has used up
// its redirects), the cluster has no quorum, the server is still loading
// its data, a replica is cut off from its master, a node was just demoted
// by a failover, or another client's script runs past the time limit
// (BUSY). None is a script error: such an operation is
// retried for a moment (runScript), then reported as ErrUnreachable so that
// fail_open serves locally.
var notHereNotNow = []string{"TRYAGAIN", "ASK ", "MOVED ", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY", "BUSY "}

// writesRefused lists the replies with which a reachable server refuses
// every write for as long as a condition of its own lasts: it is out of
// memory under the noeviction policy (OOM), cannot persist a snapshot and
// stops writes for it (MISCONF), or has fewer replicas than
// min-replicas-to-write (NOREPLICAS). Redis decides each once per script,
// at its first write, so a script refused this way has changed nothing. It
// is no script error either: the gates report it as ErrUnreachable at once,
// without runScript's retry, since it does not pass in a moment, and the
// prober's heartbeat, a write, sees an outage until it ends.
var writesRefused = []string{"OOM ", "MISCONF ", "NOREPLICAS "}

// accessRefused lists the replies with which a reachable server refuses
// this client's credentials or rights: a wrong password or user (WRONGPASS),
// none given where one is needed (NOAUTH), an ACL without the scripts'
// commands or keys (NOPERM). Such a server cannot serve the gates for this
// client until its configuration changes, which is no script error either:
// reported as ErrUnreachable at once, like writesRefused, so that fail_open
// serves locally and fail_closed says Redis cannot be used.
var accessRefused = []string{"WRONGPASS ", "NOAUTH ", "NOPERM "}

// retryBudget bounds how long runScript retries a not-here-not-now reply:
// a slot migration of a few keys or a cluster failover ends within it, and a
// longer unavailability is an outage to serve around, not to wait out. The
// caller's deadline bounds it further.
const retryBudget = time.Second

// notServed reports whether err is a reply of notHereNotNow or
// writesRefused: the server is reachable but did not run the command.
func notServed(err error) bool {
	return hasReplyPrefix(err, notHereNotNow) || hasReplyPrefix(err, writesRefused) || hasReplyPrefix(err, accessRefused)
}

// notServedNow reports whether err is a reply of notHereNotNow, one that
// passes in a moment and is worth retrying.
func notServedNow(err error) bool { return hasReplyPrefix(err, notHereNotNow) }

// hasReplyPrefix reports whether err is a server's error reply starting
// with one of prefixes (after an "ERR " some servers put first).
func hasReplyPrefix(err error, prefixes []string) bool {
	if err == nil {
		return false // before rerr, which escapes: no allocation on success
	}
	var rerr goredis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := strings.TrimPrefix(rerr.Error(), "ERR ")
	for _, p := range prefixes {
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
func runScript(ctx context.Context, c processor, s *script, keys []string, args ...any) *goredis.Cmd {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "evalsha", s.Hash(), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return runArgs(ctx, c, s.src, append(cmd, args...))
}

// runArgs runs a script from a command built in advance: args is
// {"evalsha", sha, numkeys, keys…, argv…}, src the script's source for the
// EVAL that follows a NOSCRIPT reply, as goredis.Script.Run does. Building
// the command once per source spares the caller's path the boxing of every
// key and constant argument. Not-here-not-now replies are retried as by
// runScript.
func runArgs(ctx context.Context, c processor, src string, args []any) *goredis.Cmd {
	return retryNotServed(ctx, c, func() *goredis.Cmd {
		cmd := goredis.NewCmd(ctx, args...)
		_ = c.Process(ctx, once{cmd})
		if err := cmd.Err(); err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") { // (nil first: HasErrorPrefix allocates)
			cmd = goredis.NewCmd(ctx, evalArgs(src, args)...)
			_ = c.Process(ctx, once{cmd})
		}
		return cmd
	})
}

// once marks a gate script's command as never to be sent again once it may
// have reached the server. A script is not idempotent (a second Acquire
// takes a second lease, a second Record counts a failure twice), and a
// reply lost to a reset or a read timeout says nothing about whether it
// ran; yet go-redis's cluster client resends on such errors up to its
// MaxRedirects, whatever MaxRetries says. Replies that guarantee the script
// did not run (notHereNotNow) are retried by retryNotServed instead.
type once struct{ *goredis.Cmd }

// NoRetry tells go-redis not to resend the command.
func (once) NoRetry() bool { return true }

// processor is what runs a command: a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd goredis.Cmder) error
}

// evalArgs turns an EVALSHA command's arguments into EVAL's.
func evalArgs(src string, args []any) []any {
	eval := make([]any, len(args))
	copy(eval, args)
	eval[0], eval[1] = "eval", src
	return eval
}

// retryNotServed runs run on c and, while its reply is one of
// notHereNotNow, again, within retryBudget and ctx's deadline (runScript) —
// and only while no prober of c reports an outage: once one does, no caller
// waits for Redis, and the last reply goes back to be served as the outage
// it is (fail_open locally, fail_closed with ErrUnreachable).
func retryNotServed(ctx context.Context, c processor, run func() *goredis.Cmd) *goredis.Cmd {
	cmd := run()
	if !notServedNow(cmd.Err()) {
		return cmd
	}
	return retryOn(ctx, wallPauser{pr: proberOf(c)}, cmd, run)
}

// probers maps a client (a processor) to the Prober watching it, so that a
// retry of a not-here-not-now reply ends when that prober starts an outage.
// Only a retry looks it up.
var probers sync.Map

// proberOf returns the Prober watching c, nil when none is.
func proberOf(c processor) *Prober {
	if !registrable(c) {
		return nil
	}
	if v, ok := probers.Load(c); ok {
		return v.(*Prober)
	}
	return nil
}

// registrable reports whether c can key probers: a client of a type that
// is not comparable (a struct value with a slice in it, say) would make
// the map panic, and is simply not watched.
func registrable(c processor) bool {
	return c != nil && reflect.TypeOf(c).Comparable()
}

// pauser is the time retryOn reads and waits on: the wall clock, or a
// test's.
type pauser interface {
	// Now returns the current time.
	Now() time.Time
	// Pause waits d and reports true, or reports false as soon as ctx
	// ends.
	Pause(ctx context.Context, d time.Duration) bool
}

// wallPauser is the wall clock and its timers; with pr, a pause also ends
// (false) when pr reports an outage.
type wallPauser struct{ pr *Prober }

// Now returns time.Now().
func (wallPauser) Now() time.Time { return time.Now() }

// Pause waits d on a timer, or until ctx ends; it reports false without
// waiting, and after the wait, while pr reports an outage.
func (w wallPauser) Pause(ctx context.Context, d time.Duration) bool {
	if w.pr != nil && w.pr.Down() {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return w.pr == nil || !w.pr.Down()
	}
}

// retryOn runs run again after cmd, a reply of notHereNotNow, with a
// backoff from 1 ms doubling to 32 ms, while the reply is one of
// notHereNotNow: for at most retryBudget from now (on pt) and never past
// ctx's deadline less deadlineSlack. It returns the last reply.
func retryOn(ctx context.Context, pt pauser, cmd *goredis.Cmd, run func() *goredis.Cmd) *goredis.Cmd {
	until := pt.Now().Add(retryBudget)
	if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
		until = dl.Add(-deadlineSlack)
	}
	pause := time.Millisecond
	for {
		left := until.Sub(pt.Now())
		if left <= 0 {
			return cmd
		}
		if !pt.Pause(ctx, min(pause, left)) {
			return cmd
		}
		cmd = run()
		if !notServedNow(cmd.Err()) {
			return cmd
		}
		pause = min(2*pause, 32*time.Millisecond)
	}
}
