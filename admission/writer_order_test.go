package admission_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// laterHeld is a breaker whose first free Records go through at once and
// whose later ones wait until the test lets them go (let; idempotent), each
// announcing on entered that it waits.
type laterHeld struct {
	gate.ProviderGate
	free    atomic.Int32
	entered chan struct{}
	hold    chan struct{}
	release sync.Once
}

func (g *laterHeld) let() { g.release.Do(func() { close(g.hold) }) }

func (g *laterHeld) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if g.free.Add(-1) < 0 {
		g.entered <- struct{}{}
		select {
		case <-g.hold:
		case <-ctx.Done():
			return gate.Update{}, ctx.Err()
		}
	}
	return g.ProviderGate.Record(ctx, s, d, o)
}

// orderedFixture is a CHAT scope of one source, s1, on w, whose breaker
// (never opened by failures) lets its first free Records through and holds
// the later ones; no quota gate, so the writer gives each outcome back by
// itself, Record by Record.
func orderedFixture(t *testing.T, w *admission.Writer, free int32) (*admission.SourceAdmission, *memory.Breaker, *laterHeld) {
	t.Helper()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	g := &laterHeld{ProviderGate: b, entered: make(chan struct{}, 16), hold: make(chan struct{})}
	g.free.Store(free)
	t.Cleanup(g.let) // before w's Close (newWriter's cleanup came first)
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: g, Writer: w,
	})
	require.NoError(t, err)
	return adm, b, g
}

// pickN admits n calls of adm's source before any is given back: none of
// them waits for the writer.
func pickN(t *testing.T, adm *admission.SourceAdmission, n int) []*admission.Ticket {
	t.Helper()
	tks := make([]*admission.Ticket, n)
	for i := range tks {
		tk, rej, err := adm.Pick(bounded(t), nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk, "%v", rej)
		tks[i] = tk
	}
	return tks
}

// picked is what a Pick returned.
type picked struct {
	tk  *admission.Ticket
	err error
}

// pickAsync runs a Pick of adm on its own goroutine.
func pickAsync(t *testing.T, adm *admission.SourceAdmission) <-chan picked {
	got := make(chan picked, 1)
	go func() {
		tk, _, err := adm.Pick(bounded(t), nil, 1)
		got <- picked{tk, err}
	}()
	return got
}

// A Pick that finds its source's Failure still in the writer waits for the
// Failures queued before it began to wait — not for the ones other calls
// give back while it waits: a steady stream of them would stretch the wait
// to the caller's deadline. Here the Failure queued before the wait is
// written and the one queued during it is held in its Record: the Pick
// goes on, having seen the first.
func TestPickWaitsOnlyForTheOutcomesQueuedBeforeItsWait(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: -1, Workers: 1, Timeout: 2 * time.Minute})
	stalled := holdTheWorker(t, w)
	adm, b, g := orderedFixture(t, w, 1)
	tks := pickN(t, adm, 3)

	require.NoError(t, tks[0].Done(bounded(t), admission.Result{Outcome: gate.Failure}))
	got := pickAsync(t, adm)
	eventually(t, "the Pick waits for the queued Failure", func() bool { return adm.ProbeWaiting("s1") == 1 })
	// Other calls' Failures, given back while the Pick waits.
	require.NoError(t, tks[1].Done(bounded(t), admission.Result{Outcome: gate.Failure}))
	require.NoError(t, tks[2].Done(bounded(t), admission.Result{Outcome: gate.Failure}))
	stalled.let()
	await(t, g.entered, "the writer holds the second Failure") // the first is written
	p := await(t, got, "the Pick, once the Failure queued before its wait is written")
	require.NoError(t, p.err, "the Pick waited out its ctx for the Failures given back during its wait")
	tk := p.tk
	require.NotNil(t, tk)
	snap, err := b.Snapshot(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, 1, snap.ConsecutiveFailures, "the Pick asked before the breaker heard the Failure queued before it")
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	g.let()
	eventually(t, "every outcome written", func() bool { return w.Stats().Unwritten == 0 })
	require.EqualValues(t, 5, w.Stats().Written)
}

// Outcomes end out of the order they were queued in — a later one dropped
// (a full queue) before an earlier one is written: the Pick that waits for
// both waits until the earlier one is written too, and no longer.
func TestPickWaitsForAnEarlierOutcomeWhenALaterOneEndedFirst(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: -1, Workers: 1, Queue: 1, Timeout: 2 * time.Minute})
	stalled := holdTheWorker(t, w)
	adm, b, _ := orderedFixture(t, w, 1<<20)
	tks := pickN(t, adm, 2)
	require.NoError(t, tks[0].Done(bounded(t), admission.Result{Outcome: gate.Failure})) // queued
	require.ErrorIs(t, tks[1].Done(bounded(t), admission.Result{Outcome: gate.Failure}), admission.ErrWriterFull)

	got := pickAsync(t, adm)
	eventually(t, "the Pick waits for the queued Failure", func() bool { return adm.ProbeWaiting("s1") == 1 })
	stalled.let()
	p := await(t, got, "the Pick, once the queued Failure is written")
	require.NoError(t, p.err)
	snap, err := b.Snapshot(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, 1, snap.ConsecutiveFailures, "the Pick asked before the breaker heard the queued Failure")
	require.NoError(t, p.tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	eventually(t, "the Success written", func() bool { return w.Stats().Unwritten == 0 })

	// The numbering goes on from there: the next wait is for the next one.
	tks = pickN(t, adm, 1)
	stalled = holdTheWorker(t, w)
	require.NoError(t, tks[0].Done(bounded(t), admission.Result{Outcome: gate.Failure}))
	got = pickAsync(t, adm)
	eventually(t, "the next Pick waits for the next Failure", func() bool { return adm.ProbeWaiting("s1") == 1 })
	stalled.let()
	p = await(t, got, "the next Pick")
	require.NoError(t, p.err)
	snap, err = b.Snapshot(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, 1, snap.ConsecutiveFailures, "the Pick asked before the breaker heard the next Failure")
	require.NoError(t, p.tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
}
