package pgw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// eventLog is a Full observer that keeps one line per event, in order.
type eventLog struct {
	mu     sync.Mutex
	lines  []string
	starts []pgw.AttemptStart
	waits  []any
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *eventLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *eventLog) ObserveAttempt(a pgw.AttemptRecord) {
	l.add(fmt.Sprintf("attempt %s#%d %s", a.Source, a.Attempt, a.Outcome))
}

func (l *eventLog) ObserveStateChange(c pgw.StateChange) {
	l.add(fmt.Sprintf("change %s %v>%v", c.Source, c.From, c.To))
}

func (l *eventLog) ObserveAttemptStart(a pgw.AttemptStart) {
	l.mu.Lock()
	l.starts = append(l.starts, a)
	l.mu.Unlock()
	l.add(fmt.Sprintf("start %s#%d", a.Source, a.Attempt))
}

func (l *eventLog) ObserveRejection(r pgw.Rejection) {
	l.add(fmt.Sprintf("reject %s %s", r.Source, r.Reason))
}

func (l *eventLog) ObserveWaitStart(w pgw.WaitStart) {
	l.mu.Lock()
	l.waits = append(l.waits, w)
	l.mu.Unlock()
	l.add("wait_start " + w.Reason)
}

func (l *eventLog) ObserveWaitEnd(w pgw.WaitEnd) {
	l.mu.Lock()
	l.waits = append(l.waits, w)
	l.mu.Unlock()
	l.add("wait_end " + w.Source)
}

func (l *eventLog) ObserveCall(c pgw.CallResult) {
	l.add(fmt.Sprintf("call %s %d", c.Result, c.Attempts))
}

var _ observe.Full = (*eventLog)(nil)

// The events of one call arrive in causal order: an attempt's start, its
// record, the state change its outcome caused, the rejections of the next
// round, the wait's start and end, and the call's result last; each state
// change starts where the previous one ended.
func TestEventsOfAWaitingCallArriveInCausalOrder(t *testing.T) {
	// Run again until the call waited (untilWaited), as the gateway's Info
	// line tells, not the observer under test.
	var log *eventLog
	var rec *recorder
	untilWaited(t, 200*time.Millisecond, func(env map[string]string) bool {
		waited := &atomic.Bool{}
		log = &eventLog{}
		var gw *pgw.GatewayClient
		gw, rec = newGateway(t, env, pgw.WithObserver(observe.Multi(log)),
			pgw.WithLogger(slog.New(waitSeen{testLogger(t).Handler(), waited})))
		_, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err)
		return waited.Load()
	})
	lines := log.Lines()
	want := []string{
		"start solo#1", "attempt solo#1 failure", "change solo closed>open",
		"reject solo circuit_open", "wait_start circuit_open",
		"change solo open>half_open", "wait_end solo",
		"start solo#2", "attempt solo#2 success", "change solo half_open>closed",
		"call success 2",
	}
	// A round run before the cooldown's end (a second nap) may reject the
	// source again ("cooldown"): only the first rejection is pinned.
	var got []string
	rejected := false
	for _, l := range lines {
		if strings.HasPrefix(l, "reject ") {
			if rejected {
				continue
			}
			rejected = true
		}
		got = append(got, l)
	}
	assert.Equal(t, want, got, "all events: %q", lines)

	changes := rec.Changes()
	for i := 1; i < len(changes); i++ {
		assert.Equal(t, changes[i-1].To, changes[i].From, "change %d starts where %d ended", i, i-1)
		assert.Greater(t, changes[i].Generation, changes[i-1].Generation)
	}
	require.Len(t, log.starts, 2)
	assert.Equal(t, "CHAT", log.starts[1].Scope)
	assert.True(t, log.starts[1].Probe, "the attempt after the cooldown holds the probe")
	ws, _ := log.waits[0].(pgw.WaitStart)
	we, _ := log.waits[1].(pgw.WaitEnd)
	assert.Positive(t, ws.RetryAfter)
	assert.Equal(t, ws.RetryAfter, we.RetryAfter)
	assert.Equal(t, "solo", we.Source)
	assert.NoError(t, we.Err)
	assert.Positive(t, we.Waited)
}

// A call the caller cancels while it waits, or whose deadline passes during
// an attempt, ends in an error errors.Is finds context.Canceled or
// context.DeadlineExceeded in, never ErrClosed; a stream whose deadline
// passes after its first chunk says so from Recv.
func TestCallerCancellationAndDeadlinesReachTheCallersError(t *testing.T) {
	t.Run("canceled while waiting", func(t *testing.T) {
		env, _ := singleSource(t, "wait", "60")
		env["CHAT__STALL_WINDOW_S"] = "600"
		log := &eventLog{}
		gw, _ := newGateway(t, env, pgw.WithObserver(log))
		ctx, cancel := context.WithCancel(context.Background())
		watched := make(chan struct{})
		go func() {
			// Bounded: a wait the observer never hears of would otherwise
			// hold the call for the 600 s stall window.
			defer close(watched)
			defer cancel()
			giveUp := time.Now().Add(20 * time.Second)
			for !slicesContains(log.Lines(), "wait_start circuit_open") {
				if time.Now().After(giveUp) {
					t.Error("the call's wait did not start within 20 s")
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		_, err := gw.Chat(ctx, hello())
		<-watched
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, pgw.ErrClosed)
	})
	t.Run("deadline during an attempt", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Minute})
		gw, _ := newGateway(t, map[string]string{
			"CHAT__SOURCES": "a,b", "CHAT__A__BASE_URL": up.URL, "CHAT__B__BASE_URL": up.URL,
		})
		for name, open := range map[string]func(ctx context.Context) error{
			"Chat":       func(ctx context.Context) error { _, err := gw.Chat(ctx, hello()); return err },
			"ChatStream": func(ctx context.Context) error { _, err := gw.ChatStream(ctx, hello()); return err },
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := open(ctx)
			cancel()
			assert.ErrorIs(t, err, context.DeadlineExceeded, name)
			assert.NotErrorIs(t, err, pgw.ErrClosed, name)
		}
	})
	t.Run("deadline after the first chunk", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{BeforeChunk: func(ctx context.Context, i int) {
			if i == 1 {
				<-ctx.Done()
			}
		}})
		gw, _ := newGateway(t, map[string]string{"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": up.URL})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		st, err := gw.ChatStream(ctx, hello())
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		_, err = st.Recv()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, st.Close())
		require.NoError(t, st.Close(), "a second Close does nothing")
	})
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// After Close, every entry point that starts a call — OCRPages, CallStream,
// Snapshot and the governed SDK client too — fails with ErrClosed and sends
// nothing.
func TestAfterCloseEveryEntryPointFailsWithErrClosed(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": up.URL,
		"OCR__SOURCES": "a", "OCR__A__BASE_URL": up.URL,
	})
	hc := gw.HTTPClient("CHAT")
	require.NoError(t, gw.Close())
	ctx := context.Background()
	_, err := gw.OCRPages(ctx, []pgw.OCRRequest{{Image: tinyPNG(t)}})
	assert.ErrorIs(t, err, pgw.ErrClosed, "OCRPages")
	_, err = pgw.CallStream(ctx, gw, "CHAT", func(context.Context, pgw.Source) (pgw.Streamer[int], error) {
		t.Error("open must not run after Close")
		return nil, io.EOF
	})
	assert.ErrorIs(t, err, pgw.ErrClosed, "CallStream")
	_, err = gw.Snapshot(ctx, "CHAT", "a")
	assert.ErrorIs(t, err, pgw.ErrClosed, "Snapshot")
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := hc.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	assert.ErrorIs(t, err, pgw.ErrClosed, "HTTPClient")
	assert.ErrorIs(t, pgw.ErrorFrom(err), pgw.ErrClosed)
	assert.Zero(t, up.TotalRequests())
}
