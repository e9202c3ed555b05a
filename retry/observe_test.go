package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// trail records every observe event as a line, in arrival order, and keeps
// the typed records for closer checks.
type trail struct {
	mu       sync.Mutex
	lines    []string
	attempts []observe.AttemptRecord
	calls    []observe.CallResult
	changes  []observe.StateChange
}

func (tr *trail) add(line string) { tr.lines = append(tr.lines, line) }

func (tr *trail) observer() observe.Funcs {
	return observe.Funcs{
		AttemptStart: func(e observe.AttemptStart) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add(fmt.Sprintf("start %s#%d", e.Source, e.Attempt))
		},
		Attempt: func(e observe.AttemptRecord) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add(fmt.Sprintf("attempt %s#%d %s", e.Source, e.Attempt, e.Outcome))
			tr.attempts = append(tr.attempts, e)
		},
		StateChange: func(e observe.StateChange) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add(fmt.Sprintf("state %s %v→%v", e.Source, e.From, e.To))
			tr.changes = append(tr.changes, e)
		},
		Rejection: func(e observe.Rejection) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add(fmt.Sprintf("reject %s %s", e.Source, e.Reason))
		},
		WaitStart: func(e observe.WaitStart) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add("wait " + e.Reason)
		},
		WaitEnd: func(e observe.WaitEnd) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add("waited " + e.Source)
		},
		Call: func(e observe.CallResult) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.add(fmt.Sprintf("call %s after %d on %s", e.Result, e.Attempts, e.Source))
			tr.calls = append(tr.calls, e)
		},
	}
}

func (tr *trail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

func withObserver(o observe.Observer) envOpt {
	return func(c *retry.Config) { c.Observer = o }
}

// The events of one call arrive in causal order — an attempt's outcome
// before the state change it caused, the call's result last — through the
// Async queue too.
func TestEventsArriveInCausalOrder(t *testing.T) {
	tr := &trail{}
	a := observe.Async(tr.observer(), 64)
	e := newEnv(t, withObserver(a))
	s := &script{errs: map[string][]error{"s1": {httpErr(503, 0, "down")}}}
	v, err := retry.Run(context.Background(), e.loop, 10, s.attempt)
	require.NoError(t, err)
	assert.Equal(t, "ok@s2", v)
	a.Close()
	assert.Equal(t, []string{
		"start s1#1",
		"attempt s1#1 failure",
		"state s1 closed→open",
		"start s2#2", // s1 failed in this call: demoted, not asked again
		"attempt s2#2 success",
		"call success after 2 on s2",
	}, tr.get())
	assert.Zero(t, a.Dropped())
}

func TestAttemptRecordCarriesStatusRetryAfterLatencyAndTokens(t *testing.T) {
	tr := &trail{}
	e := newEnv(t, withObserver(tr.observer()))
	calls := 0
	_, err := retry.Run(context.Background(), e.loop, 10, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		calls++
		e.clk.Advance(150 * time.Millisecond)
		if calls == 1 {
			return "", transport.Usage{}, httpErr(429, 2*time.Second, "slow down")
		}
		return "ok", transport.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, nil
	})
	require.NoError(t, err)
	require.Len(t, tr.attempts, 2)
	first, second := tr.attempts[0], tr.attempts[1]
	assert.Equal(t, "CHAT", first.Scope)
	assert.Equal(t, observe.OutcomeThrottle, first.Outcome)
	assert.Equal(t, 429, first.Status)
	assert.Equal(t, 2*time.Second, first.RetryAfter)
	assert.Equal(t, 150*time.Millisecond, first.Latency)
	assert.Error(t, first.Err)
	assert.Equal(t, observe.OutcomeSuccess, second.Outcome)
	assert.Equal(t, 7, second.Usage.TotalTokens)
	assert.Equal(t, 2, second.Attempt)
	assert.Zero(t, second.Status)
	assert.NoError(t, second.Err)
	require.Len(t, tr.calls, 1)
	assert.Equal(t, 300*time.Millisecond, tr.calls[0].Duration)
}

func TestCallResultNamesHowTheCallEnded(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	closed, closeIt := context.WithCancelCause(context.Background())
	closeIt(errs.ErrClosed) // as the gateway's Close ends a call
	for _, tc := range []struct {
		name string
		opts []envOpt
		ctx  context.Context
		prep func(t *testing.T, e *env)
		errs map[string][]error
		want string
	}{
		{name: "success", want: observe.ResultSuccess},
		{name: "caller error", errs: map[string][]error{"s1": {httpErr(400, 0, "bad")}}, want: observe.ResultCallerError},
		{name: "max attempts", opts: []envOpt{withScope(func(s *config.ScopeSettings) { s.MaxAttempts = 1 })},
			errs: map[string][]error{"s1": {errBoom}}, want: observe.ResultUnavailable},
		{name: "circuit open, fail fast", prep: func(t *testing.T, e *env) { e.open(t, "s1"); e.open(t, "s2") }, want: observe.ResultCircuitOpen},
		{name: "stalled", opts: []envOpt{withScope(func(s *config.ScopeSettings) { s.CircuitOpen = "wait" })},
			prep: func(t *testing.T, e *env) { e.forceOpen(t, "s1"); e.forceOpen(t, "s2") }, want: observe.ResultStalled},
		{name: "canceled", ctx: canceled, want: observe.ResultCanceled},
		{name: "closed", ctx: closed, want: observe.ResultClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trail{}
			e := newEnv(t, append(tc.opts, withObserver(tr.observer()))...)
			if tc.prep != nil {
				tc.prep(t, e)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			s := &script{errs: tc.errs}
			_, err := retry.Run(ctx, e.loop, 10, s.attempt)
			require.Len(t, tr.calls, 1)
			c := tr.calls[0]
			assert.Equal(t, tc.want, c.Result)
			if tc.want == observe.ResultClosed {
				assert.Equal(t, errs.ErrClosed, c.Err, "the error the gateway's caller gets")
			} else {
				assert.Equal(t, err, c.Err)
			}
			assert.Equal(t, "CHAT", c.Scope)
		})
	}
}

func (e *env) forceOpen(t testing.TB, source string) {
	t.Helper()
	require.NoError(t, e.breaker.Force(context.Background(), source, gate.ForceOpen))
}

// A chat stream holds its attempt until it ends: the attempt's record, the
// state change its outcome causes and the call's result come then.
func TestChatStreamReportsItsAttemptAndCallWhenItEnds(t *testing.T) {
	tr := &trail{}
	e := newEnv(t, withObserver(tr.observer()))
	cut := errors.New("stream cut")
	fc := &fakeChat{plans: map[string][]chatPlan{"s1": {{chunks: []string{"a", "b"}, endErr: cut}}}}
	st, err := newChat(e, fc, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, []string{"start s1#1"}, tr.get(), "nothing ends before the stream does")
	for {
		if _, err := st.Recv(); err != nil {
			require.ErrorIs(t, err, cut)
			break
		}
	}
	require.NoError(t, st.Close())
	assert.Equal(t, []string{
		"start s1#1",
		"attempt s1#1 failure",
		"state s1 closed→open",
		"call error after 1 on s1",
	}, tr.get())

	tr2 := &trail{}
	e2 := newEnv(t, withObserver(tr2.observer()))
	st, err = newChat(e2, &fakeChat{}, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"start s1#1", "attempt s1#1 abandoned", "call abandoned after 1 on s1"}, tr2.get())

	tr3 := &trail{}
	e3 := newEnv(t, withObserver(tr3.observer()))
	resp, err := newChat(e3, &fakeChat{}, retry.ChatOptions{}).Complete(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, "s1", resp.Source)
	assert.Equal(t, []string{"start s1#1", "attempt s1#1 success", "call success after 1 on s1"}, tr3.get())
}

// A panicking attempt is reported, everything it held goes back, and the
// panic goes on to the caller.
func TestPanickingAttemptIsReportedAndRepanics(t *testing.T) {
	tr := &trail{}
	e := newEnv(t, withObserver(tr.observer()))
	assert.PanicsWithValue(t, "attempt bug", func() {
		_, _ = retry.Run(context.Background(), e.loop, 10, func(context.Context, config.Source) (string, transport.Usage, error) {
			panic("attempt bug")
		})
	})
	assert.Equal(t, []string{"start s1#1", "attempt s1#1 panic", "call error after 1 on s1"}, tr.get())
	e.requireNothingHeld(t)
}

// The admission gets the loop's observer: waits are reported.
func TestLoopObserverReachesTheAdmission(t *testing.T) {
	tr := &trail{}
	e := newEnv(t, withObserver(tr.observer()), withScope(func(s *config.ScopeSettings) { s.CircuitOpen = "wait" }))
	e.open(t, "s1")
	e.open(t, "s2")
	_, err := retry.Run(context.Background(), e.loop, 10, (&script{}).attempt)
	require.NoError(t, err)
	lines := tr.get()
	assert.Contains(t, lines, "wait circuit_open")
	assert.Contains(t, lines, "waited s1")
	assert.Equal(t, "call success after 1 on s1", lines[len(lines)-1])
}
