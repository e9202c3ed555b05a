package admission_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// batchQuota is a memory quota whose Conclude remembers each batch's size;
// the first batch waits until the test lets it go, so that later outcomes
// queue up behind it.
type batchQuota struct {
	*memory.Quota
	hold    chan struct{}
	entered chan struct{} // closed when the first batch begins to wait, when not nil
	release sync.Once
	first   sync.Once
	mu      sync.Mutex
	sizes   []int
}

// let lets the first batch go; idempotent, so that a test's cleanup can
// call it too: a test that fails before it lets the batch go must not leave
// the writer's worker waiting, nor its Close.
func (q *batchQuota) let() { q.release.Do(func() { close(q.hold) }) }

func (q *batchQuota) Conclude(ctx context.Context, b gate.ProviderGate, cs []gate.Conclusion) bool {
	q.first.Do(func() {
		if q.entered != nil {
			close(q.entered)
		}
		<-q.hold
	})
	q.mu.Lock()
	q.sizes = append(q.sizes, len(cs))
	q.mu.Unlock()
	return q.Quota.Conclude(ctx, b, cs)
}

// The writer gives outcomes back through the quota gate's Conclude — Record
// and Finish in one operation — and writes what queued up meanwhile as one
// batch.
func TestWriterConcludesQueuedOutcomesInBatches(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 100})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 100}})
	require.NoError(t, err)
	q := &batchQuota{Quota: mq, hold: make(chan struct{})}
	w, err := admission.NewWriter(admission.WriterConfig{Workers: 1})
	require.NoError(t, err)
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	const n = 20
	for i := range n {
		tk, _, err := adm.Pick(bounded(t), nil, 1)
		require.NoError(t, err)
		o := gate.Success
		if i%2 == 1 {
			o = gate.Released
		}
		require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: o, Tokens: -1}))
	}
	q.let()
	require.NoError(t, w.Close(bounded(t)))
	require.Equal(t, admission.WriterStats{Written: n}, w.Stats())
	total, largest := 0, 0
	for _, s := range q.sizes {
		total += s
		largest = max(largest, s)
	}
	require.Equal(t, n, total, "every outcome went through Conclude")
	require.Greater(t, largest, 1, "outcomes that queued up were written as one batch")
	require.Zero(t, mq.InFlight("s1"), "every permit was given back")
	s, err := b.Snapshot(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, gate.Closed, s.State)
}
