package admission_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// hookedQuota is a memory quota whose Acquire runs before first: a test
// frees and takes slots between the sources a round asks. It keeps only the
// quota methods, so the admission asks the breaker and the quota apart.
type hookedQuota struct {
	q      *memory.Quota
	before func(source string)
	asked  map[string]int
}

func (h *hookedQuota) Acquire(ctx context.Context, source string, est int64) (gate.Permit, gate.QuotaDecision, error) {
	h.asked[source]++
	if h.before != nil {
		h.before(source)
	}
	return h.q.Acquire(ctx, source, est)
}

func (h *hookedQuota) Settle(ctx context.Context, p gate.Permit, actual int64) error {
	return h.q.Settle(ctx, p, actual)
}

func (h *hookedQuota) Release(ctx context.Context, p gate.Permit) error { return h.q.Release(ctx, p) }

// slotPair is an admission over s1 then s2 (priority order), one in-flight
// slot each, with calls given back on the caller's goroutine, and the two
// tickets that hold the slots of s1 and of s2.
func slotPair(t *testing.T) (adm *admission.SourceAdmission, hq *hookedQuota, onS1, onS2 *admission.Ticket) {
	t.Helper()
	b, err := memory.NewBreaker(gate.Policy{})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}, "s2": {MaxInFlight: 1}})
	require.NoError(t, err)
	hq = &hookedQuota{q: mq, asked: map[string]int{}}
	adm, err = admission.New(admission.Config{
		Scope:   "EMBEDDING",
		Sources: []admission.Source{{Name: "s1"}, {Name: "s2", Priority: 1}},
		Breaker: b, Quota: hq, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx := context.Background()
	onS1, _, err = adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Equal(t, "s1", onS1.Source)
	onS2, _, err = adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Equal(t, "s2", onS2.Source)
	clear(hq.asked)
	return adm, hq, onS1, onS2
}

// A round asks its sources one after another. When another call gives s1's
// slot back after the round asked s1, and s2's slot is held, the round saw
// every slot held though s1's is free: it asks again and is admitted. Split
// calls' parts, no more at once than the scope's slots, refused each other
// this way under QUOTA_FULL=fail_fast.
func TestRoundAsksAgainWhenASlotCameBackDuringIt(t *testing.T) {
	ctx := context.Background()
	adm, hq, a, b := slotPair(t)
	hq.before = func(source string) {
		if source == "s2" && a != nil {
			require.NoError(t, a.Done(ctx, admission.Result{Outcome: gate.Success}))
			a = nil
		}
	}
	tk, rej, err := adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.NotNil(t, tk, "s1's slot was free when the round ended: %v", rej)
	assert.Equal(t, "s1", tk.Source)
	assert.Equal(t, map[string]int{"s1": 2, "s2": 1}, hq.asked, "one round more, no more")
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))
	require.NoError(t, b.Done(ctx, admission.Result{Outcome: gate.Success}))
	assert.Zero(t, hq.q.InFlight("s1")+hq.q.InFlight("s2"), "nothing held")
}

// Without a slot given back during the round, a round that finds every
// slot held is refused at once: one question per source.
func TestRoundRefusedWhenNoSlotCameBack(t *testing.T) {
	ctx := context.Background()
	adm, hq, a, b := slotPair(t)
	tk, rej, err := adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Nil(t, tk)
	require.Len(t, rej, 2)
	for _, r := range rej {
		assert.Equal(t, admission.RateLimited, r.Reason, r.Source)
	}
	assert.Equal(t, map[string]int{"s1": 1, "s2": 1}, hq.asked)
	require.NoError(t, a.Done(ctx, admission.Result{Outcome: gate.Success}))
	require.NoError(t, b.Done(ctx, admission.Result{Outcome: gate.Success}))
}

// Slots that churn under other calls — each time the round asks s2, s1's
// slot is given back and at once taken by another call — make a round ask
// again a bounded number of times, then refuse: a fail_fast call is not
// held in a loop by others' traffic.
func TestRoundsAskAgainBoundedUnderChurn(t *testing.T) {
	ctx := context.Background()
	adm, hq, a, b := slotPair(t)
	inHook := false
	hq.before = func(source string) {
		if source != "s2" || inHook {
			return
		}
		inHook = true
		defer func() { inHook = false }()
		require.NoError(t, a.Done(ctx, admission.Result{Outcome: gate.Success}))
		next, rej, err := adm.Pick(ctx, nil, 0) // another call takes the slot
		require.NoError(t, err)
		require.NotNil(t, next, "%v", rej)
		require.Equal(t, "s1", next.Source)
		a = next
	}
	tk, rej, err := adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Nil(t, tk)
	require.Len(t, rej, 2)
	// The round and three more; the other calls' rounds asked s1 once each.
	assert.Equal(t, 4, hq.asked["s2"], "rounds asked again, bounded")
	assert.Equal(t, 4+4, hq.asked["s1"])
	require.NoError(t, a.Done(ctx, admission.Result{Outcome: gate.Success}))
	require.NoError(t, b.Done(ctx, admission.Result{Outcome: gate.Success}))
	assert.Zero(t, hq.q.InFlight("s1")+hq.q.InFlight("s2"), "nothing held")
}
