package pgw_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// These tests check the no-runnable matrix, the stall budget and the
// attempt budget as a user meets them: a custom scope driven by pgw.Call,
// whose attempts the test holds and releases through channels, and the
// errors and observer events a caller gets.

// waitWatch is an observer that hands every wait's start and end and every
// state change to channels, and keeps each attempt's probe flag and outcome.
type waitWatch struct {
	starts   chan pgw.WaitStart
	ends     chan pgw.WaitEnd
	changes  chan pgw.StateChange
	mu       sync.Mutex
	probes   []bool
	outcomes []string // "source:outcome" per attempt, in order
}

func newWaitWatch() *waitWatch {
	return &waitWatch{
		starts:  make(chan pgw.WaitStart, 64),
		ends:    make(chan pgw.WaitEnd, 64),
		changes: make(chan pgw.StateChange, 64),
	}
}

func (w *waitWatch) option() pgw.Option {
	return pgw.WithObserver(pgw.ObserverFuncs{
		WaitStart: func(s pgw.WaitStart) { w.starts <- s },
		WaitEnd:   func(e pgw.WaitEnd) { w.ends <- e },
		StateChange: func(c pgw.StateChange) {
			select {
			case w.changes <- c:
			default:
			}
		},
		Attempt: func(a pgw.AttemptRecord) {
			w.mu.Lock()
			w.outcomes = append(w.outcomes, a.Source+":"+a.Outcome)
			w.mu.Unlock()
		},
		AttemptStart: func(a pgw.AttemptStart) {
			w.mu.Lock()
			w.probes = append(w.probes, a.Probe)
			w.mu.Unlock()
		},
	})
}

// Outcomes lists "source:outcome" per attempt, in order.
func (w *waitWatch) Outcomes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.outcomes...)
}

// nextStart is the next wait's start; the test fails if none comes.
func (w *waitWatch) nextStart(t *testing.T) pgw.WaitStart {
	t.Helper()
	select {
	case s := <-w.starts:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no wait started within 10s")
		return pgw.WaitStart{}
	}
}

// changeTo blocks until a state change to state arrives.
func (w *waitWatch) changeTo(t *testing.T, state pgw.State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-w.changes:
			if c.To == state {
				return
			}
		case <-timeout:
			t.Fatalf("no change to %v within 10s", state)
		}
	}
}

// noWait fails the test if a wait has started.
func (w *waitWatch) noWait(t *testing.T) {
	t.Helper()
	select {
	case s := <-w.starts:
		t.Fatalf("a wait started: %+v", s)
	default:
	}
}

type genFn = func(context.Context, pgw.Source) (string, pgw.Usage, error)

func answerWith(status int) genFn {
	return func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		if status == 0 {
			return "ok", pgw.Usage{}, nil
		}
		return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: status, Message: "upstream says no"}
	}
}

// bySource answers per source: 0 is a success, anything else that status.
func bySource(status map[string]int) genFn {
	return func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		return answerWith(status[src.Name])(ctx, src)
	}
}

// held is a call of the test's whose attempt is running and blocked until
// released or its ctx cancelled; done gives the call's error.
type held struct {
	source  string
	release chan struct{}
	cancel  context.CancelFunc
	answer  genFn // what the attempt does once released
	done    chan error
}

// finish releases the attempt to succeed and requires the call's success.
func (h *held) finish(t *testing.T) {
	t.Helper()
	require.NoError(t, h.end(t, answerWith(0)), "the held call")
}

// end releases the attempt to do fn and returns the call's error (a panic
// as an error that says so).
func (h *held) end(t *testing.T, fn genFn) error {
	t.Helper()
	h.answer = fn
	close(h.release)
	return h.result(t)
}

// result is the call's error once it has ended.
func (h *held) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the held call did not end within 10s")
		return nil
	}
}

// errPanicked is what a held call that panicked ends with.
var errPanicked = errors.New("the call panicked")

// hold starts a call on scope whose attempt blocks until released, and
// returns once the attempt is running. A call that ends before its attempt
// starts with *CircuitOpenError (a cooldown not yet over) is started again.
func hold(t *testing.T, gw *pgw.GatewayClient, scope string) *held {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithCancel(context.Background())
		h := &held{release: make(chan struct{}), cancel: cancel, done: make(chan error, 1)}
		entered := make(chan string, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					h.done <- errPanicked
				}
			}()
			_, err := pgw.Call(ctx, gw, scope, func(actx context.Context, src pgw.Source) (string, pgw.Usage, error) {
				entered <- src.Name
				select {
				case <-h.release:
					return h.answer(actx, src)
				case <-actx.Done():
					return "", pgw.Usage{}, actx.Err()
				}
			})
			h.done <- err
		}()
		select {
		case h.source = <-entered:
			t.Cleanup(cancel)
			return h
		case err := <-h.done:
			cancel()
			var coe *pgw.CircuitOpenError
			require.ErrorAs(t, err, &coe, "the holding call ended before its attempt")
		}
	}
	t.Fatal("no attempt was admitted within 10s")
	return nil
}

// probeHeld is a GEN scope of one source "a" whose breaker a 503 opened for
// a millisecond, and a call holding its probe: every other call now meets
// a HalfOpen breaker with its probe in flight.
func probeHeld(t *testing.T, env map[string]string) (*pgw.GatewayClient, *waitWatch, *held) {
	t.Helper()
	ww := newWaitWatch()
	gw, _ := newGateway(t, probeEnv(env), ww.option())
	_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusServiceUnavailable))
	var gue *pgw.GatewayUnavailableError
	require.ErrorAs(t, err, &gue, "the 503 spent the one attempt and opened the breaker")
	h := hold(t, gw, "GEN")
	ww.mu.Lock()
	probe := ww.probes[len(ww.probes)-1]
	ww.mu.Unlock()
	require.True(t, probe, "the held attempt is the breaker's probe")
	for len(ww.starts) > 0 { // a wait of the holder's own, for the cooldown
		<-ww.starts
	}
	return gw, ww, h
}

// probeEnv is the env of probeHeld's scope, with env's keys added.
func probeEnv(env map[string]string) map[string]string {
	base := map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a",
		"GEN__FAILURE_THRESHOLD": "1",
		"GEN__COOLDOWN_S":        "0.001",
		"GEN__MAX_ATTEMPTS":      "1",
		"GEN__POLL_INTERVAL_S":   "0.005",
	}
	for k, v := range env {
		base[k] = v
	}
	return base
}

// Under CIRCUIT_OPEN=fail_fast a call meeting a HalfOpen breaker whose probe
// is in flight fails with *CircuitOpenError whose RetryAfter is 0 (no
// certain wait), never the probe lease; once the probe succeeds the next
// call is served at once: the rejection left nothing in the memo.
func TestAuditHalfOpenRejectionUnderFailFastRetryAfterIsZeroAndLeavesNoCooldown(t *testing.T) {
	gw, ww, h := probeHeld(t, map[string]string{"GEN__CIRCUIT_OPEN": "fail_fast"})
	snap, err := gw.Snapshot(context.Background(), "GEN", "a")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateHalfOpen, snap.State)
	assert.Equal(t, 1, snap.ProbesInFlight)
	assert.Zero(t, snap.RetryAfter, "the snapshot follows the same contract")
	for i := range 2 {
		_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "call %d", i)
		assert.Equal(t, pgw.CodeCircuitOpen, coe.Code())
		assert.Equal(t, "GEN", coe.Scope)
		assert.Equal(t, []string{"a"}, coe.Sources)
		assert.Zero(t, coe.RetryAfter, "a probe in flight: no certain wait")
	}
	h.finish(t)
	v, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
	require.NoError(t, err, "the recovered source is used at once")
	assert.Equal(t, "ok", v)
	ww.noWait(t)
}

// Under CIRCUIT_OPEN=wait the same call waits, with no certain end, and is
// served as soon as the probe has closed the breaker.
func TestAuditHalfOpenRejectionUnderWaitWaitsForTheProbe(t *testing.T) {
	gw, ww, h := probeHeld(t, map[string]string{"GEN__CIRCUIT_OPEN": "wait", "GEN__QUOTA_FULL": "fail_fast"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
		done <- err
	}()
	ws := ww.nextStart(t)
	assert.Equal(t, "circuit_open", ws.Reason)
	assert.Equal(t, map[string]string{"a": "circuit_open"}, ws.Reasons)
	assert.Zero(t, ws.RetryAfter, "a probe in flight: no certain wait")
	select {
	case err := <-done:
		t.Fatalf("the call ended while the probe was in flight: %v", err)
	default:
	}
	h.finish(t)
	require.NoError(t, <-done)
	we := <-ww.ends
	assert.Equal(t, "a", we.Source)
	assert.NoError(t, we.Err)
}

// A wait with no certain end ends once the stall window is spent while no
// call of the scope delivered: *AllSourcesExhausted{Reason: stalled} naming
// each source's reason — circuit_open for a breaker whose probe is in
// flight, rate_limited for a source whose in-flight slot is taken.
func TestAuditAWaitWithNoCertainEndEndsStalledWithEachSourcesReason(t *testing.T) {
	t.Run("circuit_open", func(t *testing.T) {
		gw, _, h := probeHeld(t, map[string]string{
			"GEN__CIRCUIT_OPEN":   "wait",
			"GEN__QUOTA_FULL":     "fail_fast",
			"GEN__STALL_WINDOW_S": "0.05",
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
		require.NoError(t, ctx.Err(), "the stall window, not the deadline, ended the call")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.CodeExhausted, ase.Code())
		assert.Equal(t, pgw.ReasonStalled, ase.Reason)
		assert.Equal(t, map[string]string{"a": "circuit_open"}, ase.Reasons)
		assert.Zero(t, ase.RetryAfter)
		h.finish(t)
	})
	t.Run("rate_limited", func(t *testing.T) {
		ww := newWaitWatch()
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":            "GEN",
			"GEN__SOURCES":          "a",
			"GEN__A__MAX_IN_FLIGHT": "1",
			"GEN__QUOTA_FULL":       "wait",
			"GEN__STALL_WINDOW_S":   "0.05",
			"GEN__POLL_INTERVAL_S":  "0.005",
		}, ww.option())
		h := hold(t, gw, "GEN")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
		require.NoError(t, ctx.Err(), "the stall window, not the deadline, ended the call")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonStalled, ase.Reason)
		assert.Equal(t, map[string]string{"a": "rate_limited"}, ase.Reasons)
		assert.Equal(t, "quota_full", ww.nextStart(t).Reason)
		h.finish(t)
	})
}

// mixedRound is a GEN scope where source a's breaker is open for a minute
// and source b's one in-flight slot is held: a round admits nothing, and
// not every rejection is a gate one.
func mixedRound(t *testing.T, circuitOpen, quotaFull string) (*pgw.GatewayClient, *waitWatch, *held) {
	t.Helper()
	ww := newWaitWatch()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a,b",
		"GEN__B__PRIORITY":       "1",
		"GEN__B__MAX_IN_FLIGHT":  "1",
		"GEN__FAILURE_THRESHOLD": "1",
		"GEN__COOLDOWN_S":        "60",
		"GEN__CIRCUIT_OPEN":      circuitOpen,
		"GEN__QUOTA_FULL":        quotaFull,
		"GEN__POLL_INTERVAL_S":   "0.005",
	}, ww.option())
	v, err := pgw.Call(context.Background(), gw, "GEN", bySource(map[string]int{"a": http.StatusServiceUnavailable}))
	require.NoError(t, err, "a fails and opens, b answers")
	require.Equal(t, "ok", v)
	h := hold(t, gw, "GEN")
	require.Equal(t, "b", h.source, "a is open: the held call runs on b")
	ww.noWait(t)
	return gw, ww, h
}

// The matrix row "not all gate rejections": QUOTA_FULL decides, whatever
// CIRCUIT_OPEN says. fail_fast reports quota_exhausted with both reasons
// and RetryAfter 0 (b's slot may free at any moment); wait waits and is
// served by b once its slot is free.
func TestAuditMixedRejectionsAreGovernedByQuotaFullUnderEitherCircuitOpen(t *testing.T) {
	for _, co := range []string{"fail_fast", "wait"} {
		t.Run("CIRCUIT_OPEN="+co+"/QUOTA_FULL=fail_fast", func(t *testing.T) {
			gw, ww, h := mixedRound(t, co, "fail_fast")
			_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
			var coe *pgw.CircuitOpenError
			require.False(t, errors.As(err, &coe), "not every source is open: %v", err)
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
			assert.Contains(t, []string{"cooldown", "circuit_open"}, ase.Reasons["a"])
			assert.Equal(t, "rate_limited", ase.Reasons["b"])
			assert.Len(t, ase.Reasons, 2)
			assert.Zero(t, ase.RetryAfter, "b may be admitted at any moment")
			ww.noWait(t)
			h.finish(t)
		})
		t.Run("CIRCUIT_OPEN="+co+"/QUOTA_FULL=wait", func(t *testing.T) {
			gw, ww, h := mixedRound(t, co, "wait")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			var served string
			go func() {
				_, err := pgw.Call(ctx, gw, "GEN", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
					served = src.Name
					return "ok", pgw.Usage{}, nil
				})
				done <- err
			}()
			ws := ww.nextStart(t)
			assert.Equal(t, "quota_full", ws.Reason)
			assert.Equal(t, "rate_limited", ws.Reasons["b"])
			h.finish(t)
			require.NoError(t, <-done)
			assert.Equal(t, "b", served)
		})
	}
}

// With every source open, fail_fast's RetryAfter is the earliest source's
// cooldown left, not the latest's.
func TestAuditAllSourcesOpenFailFastRetryAfterIsTheEarliestSources(t *testing.T) {
	const cooldown = 60 * time.Second
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a,b",
		"GEN__B__PRIORITY":       "1",
		"GEN__FAILURE_THRESHOLD": "1",
		"GEN__COOLDOWN_S":        "60",
	})
	_, err := pgw.Call(context.Background(), gw, "GEN", bySource(map[string]int{"a": http.StatusServiceUnavailable}))
	require.NoError(t, err)
	aOpened := time.Now() // a's cooldown ends before aOpened + cooldown
	time.Sleep(300 * time.Millisecond)
	bFrom := time.Now()
	_, err = pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusServiceUnavailable))
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe)
	assert.ElementsMatch(t, []string{"a", "b"}, coe.Sources)
	assert.Positive(t, coe.RetryAfter)
	assert.LessOrEqual(t, coe.RetryAfter, aOpened.Add(cooldown).Sub(bFrom), "a's cooldown ends first")
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he, "b's 503 is reachable")
}

// A certain wait past the caller's deadline — here a spent RPM whose next
// request fits in a minute — ends a QUOTA_FULL=wait call at once with the
// quota error and the time left.
func TestAuditQuotaRefillPastTheDeadlineFailsAtOnce(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":   "GEN",
		"GEN__SOURCES": "a",
		"GEN__A__RPM":  "1",
	})
	_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pgw.Call(ctx, gw, "GEN", answerWith(0))
	require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.Equal(t, map[string]string{"a": "rate_limited"}, ase.Reasons)
	assert.Greater(t, ase.RetryAfter, 50*time.Second)
	assert.LessOrEqual(t, ase.RetryAfter, time.Minute)
}

// The deadline check uses the earliest certain admission of any source: a
// cooldown ending within the deadline keeps the call waiting although the
// other source's quota refills past it, and the call is served.
func TestAuditACooldownEndingInTimeOutweighsAQuotaRefillPastTheDeadline(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a,b",
		"GEN__B__PRIORITY":       "1",
		"GEN__B__RPM":            "1",
		"GEN__FAILURE_THRESHOLD": "1",
		"GEN__COOLDOWN_S":        "1",
		"GEN__QUOTA_FULL":        "wait",
		"GEN__POLL_INTERVAL_S":   "0.01",
	})
	_, err := pgw.Call(context.Background(), gw, "GEN", bySource(map[string]int{"a": http.StatusServiceUnavailable}))
	require.NoError(t, err, "a opens for 1 s; b answers and spends its RPM")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var served string
	_, err = pgw.Call(ctx, gw, "GEN", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
		served = src.Name
		return "ok", pgw.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "a", served, "a's probe after its cooldown")
}

// A bad key: under fail_fast (the default) one 401 opens the breaker and the
// call ends at once with *CircuitOpenError, the 401 reachable. Under
// CIRCUIT_OPEN=wait each probe is answered 401 and reopens
// the breaker, and MAX_ATTEMPTS ends the call with *GatewayUnavailableError
// wrapping the 401; with a stall window the grown cooldown would outlast,
// the call ends at once with *CircuitOpenError, the 401 reachable.
func TestAuditABadKeyFailsFastOrWaitsUntilTheAttemptBudgetOrTheStallWindowEndsIt(t *testing.T) {
	t.Run("fail_fast", func(t *testing.T) {
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES":   "GEN",
			"GEN__SOURCES": "a",
		})
		_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusUnauthorized))
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "the default is fail_fast: at once")
		assert.Greater(t, coe.RetryAfter, 50*time.Second, "the default 60 s cooldown")
		assert.LessOrEqual(t, coe.RetryAfter, time.Minute)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the 401 is reachable")
		assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
		assert.Equal(t, []string{"a:fatal"}, rec.Outcomes(), "one 401 opens the breaker")
	})
	t.Run("MAX_ATTEMPTS", func(t *testing.T) {
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES":        "GEN",
			"GEN__SOURCES":      "a",
			"GEN__CIRCUIT_OPEN": "wait",
			"GEN__COOLDOWN_S":   "0.01",
			"GEN__MAX_ATTEMPTS": "3",
		})
		_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusUnauthorized))
		var gue *pgw.GatewayUnavailableError
		require.ErrorAs(t, err, &gue)
		assert.Equal(t, 3, gue.Attempts)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
		assert.Equal(t, []string{"a:fatal", "a:fatal", "a:fatal"}, rec.Outcomes())
		assert.Equal(t, []string{
			"a:closed>open", "a:open>half_open", "a:half_open>open", "a:open>half_open", "a:half_open>open",
		}, rec.Transitions())
	})
	t.Run("STALL_WINDOW_S", func(t *testing.T) {
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES":          "GEN",
			"GEN__SOURCES":        "a",
			"GEN__CIRCUIT_OPEN":   "wait",
			"GEN__COOLDOWN_S":     "0.4",
			"GEN__STALL_WINDOW_S": "1",
			"GEN__MAX_ATTEMPTS":   "10",
		})
		_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusUnauthorized))
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "the doubled cooldown ends past the stall window: fail_fast's error at once")
		assert.Greater(t, coe.RetryAfter, 400*time.Millisecond, "the doubled cooldown")
		assert.LessOrEqual(t, coe.RetryAfter, 800*time.Millisecond)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the 401 is reachable")
		assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
		assert.Equal(t, []string{"a:fatal", "a:fatal"}, rec.Outcomes())
	})
}

// MAX_ATTEMPTS defaults to 3 × the number of sources.
func TestAuditMaxAttemptsDefaultsToThreeTimesTheSources(t *testing.T) {
	for _, sources := range []string{"a", "a,b", "a,b,c"} {
		t.Run(sources, func(t *testing.T) {
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":             "GEN",
				"GEN__SOURCES":           sources,
				"GEN__FAILURE_THRESHOLD": "100",
			})
			_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(http.StatusBadGateway))
			var gue *pgw.GatewayUnavailableError
			require.ErrorAs(t, err, &gue)
			n := 3 * (strings.Count(sources, ",") + 1)
			assert.Equal(t, n, gue.Attempts)
			assert.Len(t, rec.Attempts(), n)
		})
	}
}

// A multi-source scope with one source open keeps serving from the others
// without waiting, under CIRCUIT_OPEN=wait as under fail_fast.
func TestAuditOneOpenSourceOfSeveralIsSkippedWithoutWaiting(t *testing.T) {
	for _, mode := range []string{"fail_fast", "wait"} {
		t.Run(mode, func(t *testing.T) {
			ww := newWaitWatch()
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "GEN",
				"GEN__SOURCES":           "a,b",
				"GEN__B__PRIORITY":       "1",
				"GEN__FAILURE_THRESHOLD": "1",
				"GEN__COOLDOWN_S":        "60",
				"GEN__CIRCUIT_OPEN":      mode,
			}, ww.option())
			fn := bySource(map[string]int{"a": http.StatusServiceUnavailable})
			_, err := pgw.Call(context.Background(), gw, "GEN", fn)
			require.NoError(t, err)
			for range 3 {
				_, err := pgw.Call(context.Background(), gw, "GEN", fn)
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"a:failure", "b:success", "b:success", "b:success", "b:success"}, ww.Outcomes())
			ww.noWait(t)
		})
	}
}

// A call cancelled while it waits for an in-flight slot (QUOTA_FULL left
// at its default, wait) returns ctx.Err(), leaves no goroutine behind and
// holds nothing: the next call is admitted as soon as the slot frees.
func TestAuditACallCancelledDuringAQuotaWaitHoldsNothing(t *testing.T) {
	ww := newWaitWatch()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "GEN",
		"GEN__SOURCES":          "a",
		"GEN__A__MAX_IN_FLIGHT": "1",
		"GEN__POLL_INTERVAL_S":  "0.005",
	}, ww.option())
	h := hold(t, gw, "GEN")
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
		done <- err
	}()
	assert.Equal(t, "quota_full", ww.nextStart(t).Reason)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	we := <-ww.ends
	assert.ErrorIs(t, we.Err, context.Canceled)
	// Eventually runs its condition on a goroutine of its own: one more
	// than before.
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 },
		10*time.Second, 5*time.Millisecond, "goroutines left behind by the cancelled call")
	h.finish(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	_, err := pgw.Call(ctx2, gw, "GEN", answerWith(0))
	require.NoError(t, err, "the cancelled call kept no slot")
}

// Backoff between failed attempts is stall time: a call that keeps
// failing with attempts to spare ends stalled once its stall window is
// spent while no call of its scope delivered, each source's reason the
// class of its last failed attempt and that attempt's error reachable —
// but not while another call of its scope keeps delivering.
func TestAuditBackoffSpendsTheStallBudgetUnlessTheScopeDelivers(t *testing.T) {
	env := map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a",
		"GEN__FAILURE_THRESHOLD": "100000",
		"GEN__MAX_ATTEMPTS":      "100000",
		"GEN__STALL_WINDOW_S":    "1.5",
	}
	backoff := pgw.WithBackoff(pgw.Backoff{Base: 100 * time.Millisecond, Max: 100 * time.Millisecond})
	check := func(t *testing.T, err error) {
		t.Helper()
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonStalled, ase.Reason)
		assert.Equal(t, map[string]string{"a": "failure"}, ase.Reasons)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the last attempt's error is reachable")
		assert.Equal(t, http.StatusBadGateway, he.StatusCode)
	}
	t.Run("nothing delivers", func(t *testing.T) {
		gw, _ := newGateway(t, env, backoff)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "GEN", answerWith(http.StatusBadGateway))
		require.NoError(t, ctx.Err())
		check(t, err)
	})
	t.Run("another call delivers", func(t *testing.T) {
		gw, _ := newGateway(t, env, backoff)
		// 60 backoffs of up to 100 ms each (full jitter, 3 s on average)
		// are stall time far past the 1.5 s window: the call reaches them
		// only if the other calls' successes keep it from being stalled.
		// (A window this wide leaves a loaded machine room: only a gap of
		// 1.5 s between the deliveries every 10 ms could stall the call.)
		const enough = 60
		var attempts atomic.Int32
		reached := make(chan struct{})
		failing := func(context.Context, pgw.Source) (string, pgw.Usage, error) {
			if attempts.Add(1) == enough {
				close(reached)
			}
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusBadGateway, Message: "bad gateway"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := pgw.Call(ctx, gw, "GEN", failing)
			done <- err
		}()
	deliver:
		for {
			select {
			case <-reached:
				break deliver
			case err := <-done:
				t.Fatalf("the call ended after %d attempts while its scope delivered: %v", attempts.Load(), err)
			case <-time.After(10 * time.Millisecond):
				_, err := pgw.Call(ctx, gw, "GEN", answerWith(0))
				require.NoError(t, err)
			}
		}
		// Nothing delivers any more: the call is stalled within a window.
		err := <-done
		require.NoError(t, ctx.Err())
		check(t, err)
	})
}

// A probe that ends without a verdict on the source — a caller error, the
// caller's cancellation, a panic in the attempt — gives its lease back: the
// breaker stays HalfOpen and the very next call gets the probe, instead of
// meeting a probe in flight until the lease expires.
func TestAuditAProbeEndedWithoutAVerdictFreesItsLease(t *testing.T) {
	cases := map[string]struct {
		end   func(t *testing.T, h *held) error
		check func(t *testing.T, err error)
	}{
		"caller error": {
			end: func(t *testing.T, h *held) error { return h.end(t, answerWith(http.StatusUnprocessableEntity)) },
			check: func(t *testing.T, err error) {
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he, "returned at once, not retried")
				assert.Equal(t, http.StatusUnprocessableEntity, he.StatusCode)
			},
		},
		"cancellation": {
			end: func(t *testing.T, h *held) error {
				h.cancel()
				return h.result(t)
			},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) },
		},
		"panic": {
			end: func(t *testing.T, h *held) error {
				return h.end(t, func(context.Context, pgw.Source) (string, pgw.Usage, error) { panic("attempt bug") })
			},
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, errPanicked, "the panic reaches the caller") },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw, _, h := probeHeld(t, map[string]string{"GEN__CIRCUIT_OPEN": "fail_fast"})
			tc.check(t, tc.end(t, h))
			snap, err := gw.Snapshot(context.Background(), "GEN", "a")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateHalfOpen, snap.State, "no verdict: the state is unchanged")
			assert.Zero(t, snap.ProbesInFlight, "the lease is back")
			_, err = pgw.Call(context.Background(), gw, "GEN", answerWith(0))
			require.NoError(t, err, "the next call gets the probe at once")
		})
	}
}

// A waiting call sleeps to the certain end of what holds it — a cooldown,
// the earliest of several, a quota's refill — instead of polling: one nap
// (two at most, should the first wake a hair early), where polling every
// 10 ms would take dozens. The wait's RetryAfter is that certain end.
func TestAuditAWaitingCallNapsOncePerCertainWait(t *testing.T) {
	const poll = "0.01"
	t.Run("one source's cooldown", func(t *testing.T) {
		ww := newWaitWatch()
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":             "GEN",
			"GEN__SOURCES":           "a",
			"GEN__CIRCUIT_OPEN":      "wait",
			"GEN__FAILURE_THRESHOLD": "1",
			"GEN__COOLDOWN_S":        "0.3",
			"GEN__POLL_INTERVAL_S":   poll,
		}, ww.option())
		var n atomic.Int32
		_, err := pgw.Call(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			if n.Add(1) == 1 {
				return answerWith(http.StatusServiceUnavailable)(ctx, src)
			}
			return "ok", pgw.Usage{}, nil
		})
		require.NoError(t, err)
		ws, we := ww.nextStart(t), <-ww.ends
		assert.Equal(t, "circuit_open", ws.Reason)
		assert.Positive(t, ws.RetryAfter)
		assert.LessOrEqual(t, ws.RetryAfter, 300*time.Millisecond)
		assert.GreaterOrEqual(t, ws.Nap, ws.RetryAfter, "the first nap reaches the cooldown's end")
		assert.LessOrEqual(t, we.Naps, 2)
		assert.Equal(t, "a", we.Source)
	})
	t.Run("the earliest of two cooldowns", func(t *testing.T) {
		ww := newWaitWatch()
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":             "GEN",
			"GEN__SOURCES":           "a,b",
			"GEN__B__PRIORITY":       "1",
			"GEN__CIRCUIT_OPEN":      "wait",
			"GEN__FAILURE_THRESHOLD": "1",
			"GEN__COOLDOWN_S":        "1",
			"GEN__POLL_INTERVAL_S":   poll,
		}, ww.option())
		_, err := pgw.Call(context.Background(), gw, "GEN", bySource(map[string]int{"a": http.StatusServiceUnavailable}))
		require.NoError(t, err, "a opens, b answers")
		aOpened := time.Now() // a's cooldown ends before aOpened + 1 s
		time.Sleep(300 * time.Millisecond)
		from := time.Now()
		var served []string
		_, err = pgw.Call(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			served = append(served, src.Name)
			if src.Name == "b" {
				return answerWith(http.StatusServiceUnavailable)(ctx, src) // b opens too: both are open
			}
			return "ok", pgw.Usage{}, nil
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"b", "a"}, served)
		ws, we := ww.nextStart(t), <-ww.ends
		assert.Equal(t, "circuit_open", ws.Reason)
		assert.Positive(t, ws.RetryAfter)
		assert.LessOrEqual(t, ws.RetryAfter, aOpened.Add(time.Second).Sub(from), "a's cooldown, the earliest")
		assert.Equal(t, "a", we.Source)
		assert.LessOrEqual(t, we.Naps, 2)
	})
	t.Run("a quota's refill", func(t *testing.T) {
		ww := newWaitWatch()
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":           "GEN",
			"GEN__SOURCES":         "a",
			"GEN__A__RPM":          "600", // a minute's 600, then one per 100 ms
			"GEN__QUOTA_FULL":      "wait",
			"GEN__POLL_INTERVAL_S": poll,
		}, ww.option())
		// Calls outpace the refill: after about 600 of them one waits.
		for i := 0; len(ww.starts) == 0; i++ {
			require.Less(t, i, 10000, "no call waited")
			_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(0))
			require.NoError(t, err)
		}
		ws, we := ww.nextStart(t), <-ww.ends
		assert.Equal(t, "quota_full", ws.Reason)
		assert.Equal(t, map[string]string{"a": "rate_limited"}, ws.Reasons)
		assert.Positive(t, ws.RetryAfter)
		assert.LessOrEqual(t, ws.RetryAfter, 100*time.Millisecond)
		assert.LessOrEqual(t, we.Naps, 2)
	})
}

// A certain wait that ends before the caller's deadline is waited out even
// when the nap's jitter alone would carry it past the deadline: the nap is
// shortened to fit, and the probe runs in time. The poll interval of 10 s
// makes every unshortened nap end seconds after the 2 s deadline.
func TestAuditANapIsShortenedToFitTheDeadlineWhenOnlyItsJitterWouldPassIt(t *testing.T) {
	ww := newWaitWatch()
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "GEN",
		"GEN__SOURCES":           "a",
		"GEN__CIRCUIT_OPEN":      "wait",
		"GEN__FAILURE_THRESHOLD": "1",
		"GEN__COOLDOWN_S":        "1",
		"GEN__POLL_INTERVAL_S":   "10",
	}, ww.option())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n atomic.Int32
	_, err := pgw.Call(ctx, gw, "GEN", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if n.Add(1) == 1 {
			return answerWith(http.StatusServiceUnavailable)(ctx, src)
		}
		return "ok", pgw.Usage{}, nil
	})
	require.NoError(t, err, "served by the probe before the deadline")
	ws := ww.nextStart(t)
	assert.Less(t, ws.Nap, 2*time.Second, "the nap fits the deadline")
	assert.GreaterOrEqual(t, ws.Nap, ws.RetryAfter, "and still reaches the cooldown's end")
}

// A 429 without Retry-After is neither an open circuit nor a certain wait:
// under either QUOTA_FULL the call backs off and tries again, and the
// breaker counts nothing.
func TestAuditA429WithoutRetryAfterIsRetriedAfterABackoffUnderEitherQuotaFull(t *testing.T) {
	for _, mode := range []string{"fail_fast", "wait"} {
		t.Run(mode, func(t *testing.T) {
			ww := newWaitWatch()
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "GEN",
				"GEN__SOURCES":           "a",
				"GEN__FAILURE_THRESHOLD": "1",
				"GEN__QUOTA_FULL":        mode,
			}, ww.option())
			var n atomic.Int32
			v, err := pgw.Call(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
				if n.Add(1) == 1 {
					return answerWith(http.StatusTooManyRequests)(ctx, src)
				}
				return "ok", pgw.Usage{}, nil
			})
			require.NoError(t, err)
			assert.Equal(t, "ok", v)
			assert.Equal(t, []string{"a:throttle", "a:success"}, ww.Outcomes())
			ww.noWait(t)
			select {
			case c := <-ww.changes:
				t.Fatalf("a 429 moved the breaker: %+v", c)
			default:
			}
		})
	}
}

// 400, 404, 413 and 422 are the caller's errors: returned at once, no
// retry and no fail-over, nothing counted against the source.
func TestAuditEveryCallerErrorStatusIsReturnedAtOnce(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ww := newWaitWatch()
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "GEN",
				"GEN__SOURCES":           "a,b",
				"GEN__B__PRIORITY":       "1",
				"GEN__FAILURE_THRESHOLD": "1",
			}, ww.option())
			_, err := pgw.Call(context.Background(), gw, "GEN", answerWith(status))
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, status, he.StatusCode)
			var gue *pgw.GatewayUnavailableError
			assert.False(t, errors.As(err, &gue), "not a spent budget")
			assert.Equal(t, []string{"a:caller_error"}, ww.Outcomes())
			snap, err := gw.Snapshot(context.Background(), "GEN", "a")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateClosed, snap.State)
			assert.Zero(t, snap.ConsecutiveFailures)
		})
	}
}

// WEIGHT shares the first picks within a priority tier, and a later tier
// is not used while its betters can run. 800 calls with weights 3 and 1:
// the heavier source's share is 0.75 with a standard deviation of 0.015,
// so the bounds below are more than six deviations away; ignored weights
// would give 0.5.
func TestAuditWeightsShareTheFirstPicksWithinATier(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":       "GEN",
		"GEN__SOURCES":     "a,b,c",
		"GEN__A__WEIGHT":   "3",
		"GEN__C__PRIORITY": "1",
		"GEN__C__WEIGHT":   "1000",
	})
	const calls = 800
	picks := map[string]int{}
	for range calls {
		v, err := pgw.Call(context.Background(), gw, "GEN", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
			return src.Name, pgw.Usage{}, nil
		})
		require.NoError(t, err)
		picks[v]++
	}
	assert.Zero(t, picks["c"], "the later tier is not used while its betters can run")
	share := float64(picks["a"]) / calls
	assert.InDelta(t, 0.75, share, 0.1, "a's share of first picks: %v", picks)
}
