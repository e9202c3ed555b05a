package pgw_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// goroutineID is the id of the goroutine it runs on.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// goroutineAlive reports whether the goroutine id still runs.
func goroutineAlive(id uint64) bool {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], fmt.Appendf(nil, "goroutine %d [", id))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// rePanicker is a hedgePanicker that also panics on every attempt record
// it hears on the caller's goroutine (a panic on a hedge leg's own
// goroutine would end the test binary: nobody could recover it), and that,
// before its hedge panic, runs hook.
type rePanicker struct {
	*hedgePanicker
	caller uint64
	hook   func()
}

func (o *rePanicker) ObserveAttempt(a pgw.AttemptRecord) {
	o.hedgePanicker.ObserveAttempt(a)
	if goroutineID() == o.caller {
		panic("observer bug again")
	}
}

func (o *rePanicker) ObserveHedge(e pgw.Hedge) {
	if e.Event == o.panicOn && o.hook != nil {
		o.hook()
	}
	o.hedgePanicker.ObserveHedge(e)
}

// An observer that panics on a hedge event, and again on the attempt
// record the race's cleanup reports, stops none of that cleanup: the
// hedge still running is cancelled before the panic reaches the caller,
// and its goroutine ends without the caller's ctx ending; no attempt is
// left holding its admission, every attempt that started ended, and the
// panic the caller gets is the first one; the second is logged once.
//
// The race: the primary ("slow") and a hedge ("fast") run; the second
// hedge delay finds no source left, and the observer panics on that
// event — once the primary has answered and while the hedge still runs —
// and then on the primary's record, which the cleanup reports.
func TestAHedgedRaceEndedByAnObserverPanicLeaksNothingWhenItPanicsAgain(t *testing.T) {
	release := make(chan struct{})
	slowID := make(chan uint64, 1)
	fastCtx := make(chan context.Context, 1)
	fastID := make(chan uint64, 1)
	obs := &rePanicker{hedgePanicker: newHedgePanicker(pgw.HedgeSkippedNoSource), caller: goroutineID()}
	obs.hook = func() {
		// The primary answers, and its goroutine — which ends once the
		// answer is delivered to the race — is gone; the hedge runs.
		fctx := <-fastCtx
		fastCtx <- fctx
		close(release)
		id := <-slowID
		for deadline := time.Now().Add(5 * time.Second); goroutineAlive(id) && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	var warns bytes.Buffer // written under the handler's lock; read once the gateway is closed
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "HEDGED",
		"HEDGED__SOURCES":        "slow,fast",
		"HEDGED__HEDGE_AFTER_S":  "0.01",
		"HEDGED__HEDGE_MAX":      "2",
		"HEDGED__FAST__PRIORITY": "1",
	}, pgw.WithObserver(obs), pgw.WithLogger(slog.New(slog.NewTextHandler(&warns, &slog.HandlerOptions{Level: slog.LevelWarn}))))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := func() (p any) {
		defer func() { p = recover() }()
		_, _ = pgw.Call(ctx, gw, "HEDGED", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			if src.Name == "slow" {
				slowID <- goroutineID()
				<-release
				return "slow", pgw.Usage{}, nil
			}
			fastID <- goroutineID()
			fastCtx <- ctx
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		})
		return nil
	}()
	assert.Equal(t, "observer bug", got, "the first panic reaches the caller")

	fctx := <-fastCtx
	select {
	case <-fctx.Done():
	default:
		t.Error("the hedge still running is cancelled before the panic reaches the caller")
	}
	id := <-fastID
	assert.Eventually(t, func() bool { return !goroutineAlive(id) }, 5*time.Second, time.Millisecond,
		"the hedge's goroutine ends without the caller's ctx ending")

	cancel() // ends whatever still waits on the caller's ctx, so that Close returns
	require.NoError(t, gw.Close())
	assertNoAdmissionHeld(t, gw, "HEDGED", "slow", "fast")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	assert.True(t, obs.panicked)
	assert.Equal(t, map[string]int{"slow": 1, "fast": 1}, obs.starts)
	assert.Equal(t, obs.starts, obs.ends, "every attempt that started ended (outcomes %v)", obs.outcomes)
	assert.Equal(t, map[string]string{"slow": observe.OutcomeAbandoned, "fast": observe.OutcomeAbandoned}, obs.outcomes)
	assert.Equal(t, 1, strings.Count(warns.String(), "level=WARN"), "the second panic is logged once: %s", warns.String())
	assert.Contains(t, warns.String(), `panic="observer bug again"`)
}
