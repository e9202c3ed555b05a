package admission_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
)

// TestOnlyTheProcessThatTripsTheBreakerWarns: two processes share one
// breaker record (as through Redis). The one whose failure trips it logs the
// Warn; the other, which only sees the record open, logs at Info that it
// observed the change.
func TestOnlyTheProcessThatTripsTheBreakerWarns(t *testing.T) {
	a := newFixture(t)
	bLogs := &logSink{}
	b, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: a.gate,
		PollInterval: poll, Clock: a.clk, Sleep: a.sleeper.sleep, Logger: slog.New(bLogs),
	})
	require.NoError(t, err)

	tk, _, err := a.adm.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.NotNil(t, tk)
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: gate.Failure}))
	tk, _, err = b.Pick(context.Background(), nil, 10)
	require.NoError(t, err)
	require.Nil(t, tk, "open for b too")

	byLevel := func(l *logSink) map[string]slog.Level {
		l.mu.Lock()
		defer l.mu.Unlock()
		out := map[string]slog.Level{}
		for _, r := range l.recs {
			out[r.Message] = r.Level
		}
		return out
	}
	assert.Equal(t, slog.LevelWarn, byLevel(a.logs)["pgw: breaker state changed"], "a caused the trip")
	bl := byLevel(bLogs)
	assert.NotContains(t, bl, "pgw: breaker state changed", "b did not cause it")
	assert.Equal(t, slog.LevelInfo, bl["pgw: breaker state change observed (made by another process or an operator)"])
}
