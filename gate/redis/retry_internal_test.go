package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// notHereScripter answers every command with the next of its replies (nil:
// success), then with the last one, and notes whether go-redis was told
// never to resend it.
type notHereScripter struct {
	replies []error
	calls   int
	resend  int // commands go-redis would have been free to send again
}

func (s *notHereScripter) Process(_ context.Context, cmd goredis.Cmder) error {
	err := s.replies[min(s.calls, len(s.replies)-1)]
	s.calls++
	if !cmd.NoRetry() {
		s.resend++
	}
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	cmd.(once).SetVal(int64(7))
	return nil
}

func TestClusterRepliesAreUnreachableNeverScriptErrors(t *testing.T) {
	for _, msg := range []string{
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"ASK 3999 127.0.0.1:30002", "MOVED 3999 127.0.0.1:30002",
		"CLUSTERDOWN The cluster is down", "LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down", "READONLY You can't write against a read only replica.",
	} {
		err := wrapErr(context.Background(), "TryEnter", "hot", replyErr(msg))
		assert.ErrorIs(t, err, ErrUnreachable, msg)
		assert.NotContains(t, err.Error(), "script error", msg)
	}
	err := wrapErr(context.Background(), "TryEnter", "hot", replyErr("ERR user_script:1: bad"))
	assert.False(t, errors.Is(err, ErrUnreachable))
	assert.Contains(t, err.Error(), "script error")
}

func TestRunScriptRetriesAMigratingSlotWithinItsBudget(t *testing.T) {
	s := newLua("return 7")
	c := &notHereScripter{replies: []error{replyErr("TRYAGAIN x"), replyErr("ASK 1 a:1"), nil}}
	v, err := runScript(context.Background(), c, s, []string{"k"}).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 7, v)
	assert.Equal(t, 3, c.calls)
	assert.Zero(t, c.resend, "a gate script is sent at most once by go-redis")

	// A script error is not retried.
	c = &notHereScripter{replies: []error{replyErr("ERR boom"), nil}}
	require.Error(t, runScript(context.Background(), c, s, []string{"k"}).Err())
	assert.Equal(t, 1, c.calls)

	// A migration that outlasts the budget ends in the last reply, within
	// the budget: on a test clock, so that a machine that falls behind
	// cannot stretch it.
	c = &notHereScripter{replies: []error{replyErr("TRYAGAIN x")}}
	pt := &stepPauser{now: time.Now()}
	start := pt.now
	run := runOnce(context.Background(), c)
	err = retryOn(context.Background(), pt, run(), run).Err()
	assert.True(t, notServed(err))
	assert.LessOrEqual(t, pt.now.Sub(start), retryBudget, "paused past the budget")
	assert.Greater(t, pt.now.Sub(start), retryBudget-32*time.Millisecond, "gave up before the budget was spent")
	assert.Greater(t, c.calls, 2)
	assert.Equal(t, pt.pauses+1, c.calls, "one run after each pause")

	// And never past the caller's deadline (less the slack): a deadline an
	// hour away on the wall clock, 20 ms away on the test clock.
	pt = &stepPauser{now: time.Now().Add(time.Hour)}
	start = pt.now
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(20*time.Millisecond))
	defer cancel()
	c = &notHereScripter{replies: []error{replyErr("TRYAGAIN x")}}
	run = runOnce(ctx, c)
	_ = retryOn(ctx, pt, run(), run)
	assert.LessOrEqual(t, pt.now.Sub(start), 20*time.Millisecond-deadlineSlack, "paused past the deadline")
	assert.Greater(t, c.calls, 2)

	// A ctx that ends during a pause ends the retries at once, on the wall
	// clock too.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	c = &notHereScripter{replies: []error{replyErr("TRYAGAIN x")}}
	assert.True(t, notServed(runScript(ctx, c, s, []string{"k"}).Err()))
	assert.Equal(t, 1, c.calls, "no run after the ctx ended")
}

// runOnce is a run of retryOn: one script command sent to c.
func runOnce(ctx context.Context, c processor) func() *goredis.Cmd {
	return func() *goredis.Cmd {
		cmd := goredis.NewCmd(ctx, "evalsha", "sha", 1, "k")
		_ = c.Process(ctx, once{cmd})
		return cmd
	}
}

// stepPauser is a test clock for retryOn: each pause moves it on by its
// length at once.
type stepPauser struct {
	now    time.Time
	pauses int
}

func (p *stepPauser) Now() time.Time { return p.now }

func (p *stepPauser) Pause(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	p.now = p.now.Add(d)
	p.pauses++
	return true
}

func TestRefusedWritesAreUnreachableAtOnce(t *testing.T) {
	s := newLua("return 7")
	for _, msg := range []string{
		"OOM command not allowed when used memory > 'maxmemory'.",
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
		"NOREPLICAS Not enough good replicas to write.",
	} {
		err := wrapErr(context.Background(), "Admit", "hot", replyErr(msg))
		assert.ErrorIs(t, err, ErrUnreachable, msg)
		assert.NotContains(t, err.Error(), "script error", msg)

		c := &notHereScripter{replies: []error{replyErr(msg), nil}}
		require.Error(t, runScript(context.Background(), c, s, []string{"k"}).Err(), msg)
		assert.Equal(t, 1, c.calls, "%s lasts: not retried", msg)
	}
	// A script running past its time limit passes: retried like a migration.
	c := &notHereScripter{replies: []error{replyErr("BUSY Redis is busy running a script."), nil}}
	v, err := runScript(context.Background(), c, s, []string{"k"}).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 7, v)
	assert.Equal(t, 2, c.calls)
}
