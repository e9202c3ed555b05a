package pgw_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// recorder is an Observer that keeps everything it is told and signals
// state changes on a channel.
type recorder struct {
	mu       sync.Mutex
	attempts []pgw.AttemptRecord
	changes  []pgw.StateChange
	calls    []pgw.CallResult
	changed  chan pgw.StateChange
}

func (r *recorder) ObserveCall(c pgw.CallResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Results lists each call's Result, in order.
func (r *recorder) Results() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		out = append(out, c.Result)
	}
	return out
}

// Calls lists each call's CallResult, in order.
func (r *recorder) Calls() []pgw.CallResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.CallResult(nil), r.calls...)
}

func (r *recorder) Changes() []pgw.StateChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.StateChange(nil), r.changes...)
}

func newRecorder() *recorder { return &recorder{changed: make(chan pgw.StateChange, 64)} }

func (r *recorder) ObserveAttempt(a pgw.AttemptRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, a)
}

func (r *recorder) ObserveStateChange(s pgw.StateChange) {
	r.mu.Lock()
	r.changes = append(r.changes, s)
	r.mu.Unlock()
	select {
	case r.changed <- s:
	default:
	}
}

func (r *recorder) Attempts() []pgw.AttemptRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.AttemptRecord(nil), r.attempts...)
}

// Outcomes lists "source:outcome" per attempt, in order.
func (r *recorder) Outcomes() []string {
	var out []string
	for _, a := range r.Attempts() {
		out = append(out, a.Source+":"+a.Outcome)
	}
	return out
}

// Transitions lists "source:from>to" per state change, in order.
func (r *recorder) Transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.changes {
		out = append(out, c.Source+":"+c.From.String()+">"+c.To.String())
	}
	return out
}

// waitFor blocks until a change to state to arrives.
func (r *recorder) waitFor(t *testing.T, to pgw.State) pgw.StateChange {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-r.changed:
			if c.To == to {
				return c
			}
		case <-timeout:
			t.Fatalf("no change to %v within 10s; saw %v", to, r.Transitions())
		}
	}
}

// testLogger writes the gateway's log through t.Log, so it shows on failure.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fastBackoff keeps the backoff between failed attempts short.
var fastBackoff = pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond})

// newGateway builds a gateway from env-style keys, closed at cleanup.
func newGateway(t *testing.T, env map[string]string, opts ...pgw.Option) (*pgw.GatewayClient, *recorder) {
	t.Helper()
	s, err := config.FromMap(env)
	require.NoError(t, err)
	rec := newRecorder()
	opts = append([]pgw.Option{pgw.WithLogger(testLogger(t)), pgw.WithObserver(rec), fastBackoff}, opts...)
	gw, err := pgw.New(context.Background(), *s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })
	return gw, rec
}

func hello() pgw.ChatRequest {
	return pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}}
}

// tinyPNG is a valid 2×2 PNG.
func tinyPNG(t testing.TB) []byte {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2))))
	return b.Bytes()
}
