package pgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// jsonLog is a logger whose lines a test reads back as JSON objects.
type jsonLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns every line whose msg starts with prefix.
func (l *jsonLog) lines(t *testing.T, prefix string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, raw := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// Entering and leaving a wait each write one Info line, and both carry the
// scope, every source's reason and the expected wait (retry_after): an
// operator who reads only the line that closes a wait still sees why it
// happened and how long it was expected to last.
func TestAWaitLogsOneInfoLineOnEachSideWithReasonsAndExpectedWait(t *testing.T) {
	// Run again until the call waited (untilWaited), as an observer
	// tells, not the log under test.
	var l *jsonLog
	untilWaited(t, 200*time.Millisecond, func(env map[string]string) bool {
		l = &jsonLog{}
		events := &eventLog{}
		gw, _ := newGateway(t, env, pgw.WithObserver(events),
			pgw.WithLogger(slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		_, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err)
		return slicesContains(events.Lines(), "wait_start circuit_open")
	})

	enter := l.lines(t, "pgw: no source may run; waiting")
	leave := l.lines(t, "pgw: wait over")
	require.Len(t, enter, 1)
	require.Len(t, leave, 1)
	for name, line := range map[string]map[string]any{"enter": enter[0], "leave": leave[0]} {
		assert.Equal(t, "INFO", line["level"], name)
		assert.Equal(t, "CHAT", line["scope"], name)
		assert.Equal(t, "circuit_open", line["reason"], name)
		reasons, _ := line["reasons"].(map[string]any)
		assert.Contains(t, []any{"cooldown", "circuit_open"}, reasons["solo"], "%s: reasons %v", name, line["reasons"])
		ra, ok := line["retry_after"].(float64) // JSON durations are nanoseconds
		assert.True(t, ok, "%s: retry_after present: %v", name, line)
		assert.Positive(t, ra, name)
	}
	assert.Equal(t, enter[0]["retry_after"], leave[0]["retry_after"], "the same expected wait on both sides")
	assert.Equal(t, "admitted", leave[0]["outcome"])
	assert.Equal(t, "solo", leave[0]["source"])
}
