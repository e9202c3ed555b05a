package retry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

type ctxTag struct{}

// tracer is a ContextObserver that tags each ctx it hands back and checks
// that every end comes with the ctx its start returned.
type tracer struct {
	observe.Nop
	off bool

	mu     sync.Mutex
	lines  []string
	starts []observe.AttemptStart
}

func (tr *tracer) Enabled() bool { return !tr.off }

func tag(ctx context.Context) string { s, _ := ctx.Value(ctxTag{}).(string); return s }

func (tr *tracer) log(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
}

func (tr *tracer) StartCall(ctx context.Context, e observe.CallStart) context.Context {
	tr.log("start call %s op=%q model=%q under %q", e.Scope, e.Operation, e.Model, tag(ctx))
	return context.WithValue(ctx, ctxTag{}, "call")
}

func (tr *tracer) StartAttempt(ctx context.Context, e observe.AttemptStart) context.Context {
	tr.mu.Lock()
	tr.starts = append(tr.starts, e)
	tr.mu.Unlock()
	tr.log("start attempt %s#%d under %q", e.Source, e.Attempt, tag(ctx))
	return context.WithValue(ctx, ctxTag{}, fmt.Sprintf("attempt %d", e.Attempt))
}

func (tr *tracer) EndAttempt(ctx context.Context, e observe.AttemptRecord) {
	tr.log("end attempt %s#%d %s with %q", e.Source, e.Attempt, e.Outcome, tag(ctx))
}

func (tr *tracer) EndWait(ctx context.Context, e observe.WaitEnd) {
	tr.log("end wait %s → %s with %q", e.Reason, e.Source, tag(ctx))
}

func (tr *tracer) EndCall(ctx context.Context, e observe.CallResult) {
	tr.log("end call %s with %q", e.Result, tag(ctx))
}

func (tr *tracer) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

// A ContextObserver sees each call and attempt with its ctx; the attempt
// runs under the ctx StartAttempt returned, and each end comes with its
// start's ctx. It works inside a Multi too.
func TestContextObserverFollowsTheCall(t *testing.T) {
	tr := &tracer{}
	e := newEnv(t, withObserver(observe.Multi(observe.Nop{}, tr)), withScope(func(s *config.ScopeSettings) {
		s.Sources[0].Model, s.Sources[0].BaseURL, s.Sources[1].Priority = "m1", "https://one.example/v1", 1
	}))
	var seen []string
	ctx := context.WithValue(context.Background(), ctxTag{}, "caller")
	v, err := retry.Run(ctx, e.loop, 10, func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		seen = append(seen, tag(ctx))
		if src.Name == "s1" {
			return "", transport.Usage{}, httpErr(503, 0, "down")
		}
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.Equal(t, []string{"attempt 1", "attempt 2"}, seen, "each attempt runs under its StartAttempt ctx")
	assert.Equal(t, []string{
		`start call CHAT op="" model="" under "caller"`,
		`start attempt s1#1 under "call"`,
		`end attempt s1#1 failure with "attempt 1"`,
		`start attempt s2#2 under "call"`,
		`end attempt s2#2 success with "attempt 2"`,
		`end call success with "call"`,
	}, tr.get())
	require.Len(t, tr.starts, 2)
	assert.Equal(t, observe.AttemptStart{Scope: "CHAT", Source: "s1", Attempt: 1, At: tr.starts[0].At,
		Model: "m1", BaseURL: "https://one.example/v1", Provider: "openai", Priority: 0, State: gate.Closed}, tr.starts[0])
	assert.Equal(t, 1, tr.starts[1].Priority)
}

// A wait ends on the ContextObserver with the waiting call's ctx.
func TestContextObserverSeesTheWait(t *testing.T) {
	tr := &tracer{}
	e := newEnv(t, withObserver(tr), names("s1"), withScope(func(s *config.ScopeSettings) { s.CircuitOpen = "wait" }))
	e.open(t, "s1")
	_, err := retry.Run(context.Background(), e.loop, 10, func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Contains(t, tr.get(), `end wait circuit_open → s1 with "call"`)
}

// A ContextObserver that is disabled when a call starts is not called.
func TestDisabledContextObserverIsNotCalled(t *testing.T) {
	tr := &tracer{off: true}
	e := newEnv(t, withObserver(tr))
	ran := false
	_, err := retry.Run(context.Background(), e.loop, 10, func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
		ran = true
		assert.Empty(t, tag(ctx))
		return "ok", transport.Usage{}, nil
	})
	require.NoError(t, err)
	assert.True(t, ran)
	assert.Empty(t, tr.get())
}
