package admission_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// lockedText is a log's text, safe for concurrent use.
type lockedText struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedText) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// The writer tells the observer of the state changes its writes show on a
// worker's goroutine, where no caller can recover a panic: an observer that
// panics there does not end the process. The panic is logged without the
// source's credential, the worker goes on — the other scope's state change
// is told, every outcome is counted written — and Close returns. The
// scenario runs in a child process: before the fix the panic killed it.
func TestWriterObserverPanicIsRecovered(t *testing.T) {
	testutil.InChild(t, func(t *testing.T) {
		var log lockedText
		w, err := admission.NewWriter(admission.WriterConfig{
			Workers: 1, Logger: slog.New(slog.NewTextHandler(&log, nil)),
			Credentials: func(scope, source string) []string {
				if scope == "CHAT" && source == "s1" {
					return []string{"sk-secret-3"}
				}
				return nil
			},
		})
		require.NoError(t, err)
		var (
			mu      sync.Mutex
			changes []string
			armed   = true
		)
		obs := observe.Funcs{StateChange: func(e observe.StateChange) {
			mu.Lock()
			changes = append(changes, e.Scope+"/"+e.Source+":"+e.To.String())
			panicking := armed
			armed = false
			mu.Unlock()
			if panicking {
				panic("observer bug, key sk-secret-3")
			}
		}}
		var tickets []*admission.Ticket
		var breakers []*memory.Breaker
		for _, scope := range []string{"CHAT", "EMBEDDING"} {
			b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: window, ProbeTTL: window})
			require.NoError(t, err)
			adm, err := admission.New(admission.Config{
				Scope: scope, Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Writer: w, Observer: obs,
				Logger: slog.New(slog.DiscardHandler),
			})
			require.NoError(t, err)
			tk, _, err := adm.Pick(bounded(t), nil, 1)
			require.NoError(t, err)
			tickets, breakers = append(tickets, tk), append(breakers, b)
		}
		for _, tk := range tickets {
			require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Failure}))
		}
		require.NoError(t, w.Close(bounded(t)))
		assert.Equal(t, admission.WriterStats{Written: 2}, w.Stats())
		for _, b := range breakers {
			s, err := b.Snapshot(context.Background(), "s1")
			require.NoError(t, err)
			assert.Equal(t, gate.Open, s.State)
		}
		mu.Lock()
		assert.ElementsMatch(t, []string{"CHAT/s1:open", "EMBEDDING/s1:open"}, changes,
			"the worker went on after the panic: both changes were told")
		mu.Unlock()
		assert.Contains(t, log.String(), "an observer panicked on a goroutine of pgw's own")
		assert.Contains(t, log.String(), "observer bug")
		assert.NotContains(t, log.String(), "sk-secret-3", "the panic is logged redacted")
	})
}
