package admission_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
)

// onceCounter checks, at each step of the writer's counting, that every
// outcome handed over so far is counted exactly once in Written, Failed,
// Dropped and Unwritten together.
type onceCounter struct {
	w      *admission.Writer
	handed atomic.Uint64 // Done calls that handed an outcome over
	mu     sync.Mutex
	wrong  []string
}

func newOnceCounter(w *admission.Writer) *onceCounter {
	c := &onceCounter{w: w}
	w.OnCount(c.check)
	return c
}

// done hands tk's outcome to the writer.
func (c *onceCounter) done(t *testing.T, tk *admission.Ticket) error {
	t.Helper()
	c.handed.Add(1)
	return tk.Done(bounded(t), admission.Result{Outcome: gate.Success})
}

func (c *onceCounter) check() {
	// Nothing is handed over while a count is being made: the test hands
	// outcomes over only between the writer's steps it waits for.
	s := c.w.Stats()
	if got, want := s.Written+s.Failed+s.Dropped+uint64(s.Unwritten), c.handed.Load(); got != want {
		c.mu.Lock()
		c.wrong = append(c.wrong, fmt.Sprintf("%+v counts %d outcomes, %d handed over", s, got, want))
		c.mu.Unlock()
	}
}

func (c *onceCounter) requireOnce(t *testing.T) {
	t.Helper()
	c.check()
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.wrong, "an outcome counted twice, or not at all")
}

// Every outcome is counted exactly once, at every step of the writer's
// counting: one written, one refused by a full queue, one refused because
// Close has begun, and one queued then written by Close.
func TestWriterStatsCountEachOutcomeOnceWrittenOrRefused(t *testing.T) {
	w, err := admission.NewWriter(admission.WriterConfig{Queue: 1, Workers: 1, Timeout: time.Minute, Linger: -1})
	require.NoError(t, err)
	c := newOnceCounter(w)
	f, sg := stalledWriterFixture(t, w)
	pick := func() *admission.Ticket { return pickOne(t, f) }
	t1, t2, t3, t4 := pick(), pick(), pick(), pick()
	require.NoError(t, c.done(t, t1))
	await(t, sg.entered, "the only worker writes t1's outcome")
	require.NoError(t, c.done(t, t2), "queued")
	require.ErrorIs(t, c.done(t, t3), admission.ErrWriterFull, "the queue is full")

	closed := make(chan error, 1)
	go func() { closed <- w.Close(bounded(t)) }()
	await(t, w.Closing(), "Close begins")
	require.ErrorIs(t, c.done(t, t4), admission.ErrWriterFull, "put during Close")
	close(sg.hold)
	require.NoError(t, await(t, closed, "Close writes t1 and t2"))

	c.requireOnce(t)
	assert.Equal(t, admission.WriterStats{Written: 2, Dropped: 2}, w.Stats())
}

// The same for outcomes Close gives up on: the write in progress fails,
// the queued ones are dropped.
func TestWriterStatsCountEachOutcomeOnceWhenCloseGivesUp(t *testing.T) {
	w, err := admission.NewWriter(admission.WriterConfig{Workers: 1, Timeout: time.Hour, Linger: -1})
	require.NoError(t, err)
	c := newOnceCounter(w)
	f, sg := stalledWriterFixture(t, w)
	for i := range 3 {
		tk, _, err := f.adm.Pick(bounded(t), nil, 10)
		require.NoError(t, err)
		require.NoError(t, c.done(t, tk))
		if i == 0 {
			await(t, sg.entered, "the only worker writes the first outcome")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Close gives up at once: the worker is held by the gate
	require.ErrorIs(t, w.Close(ctx), context.Canceled)

	c.requireOnce(t)
	assert.Equal(t, admission.WriterStats{Failed: 1, Dropped: 2}, w.Stats())
}
