package admission_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// lingerFixture is an admission of one source whose quota counts the
// writer's batches, behind a writer with the linger given and 8 workers.
// The source has a rate limit and no MaxInFlight: its outcomes free no
// slot, so a round of them lingers.
func lingerFixture(t *testing.T, linger time.Duration) (*admission.SourceAdmission, *batchQuota, *admission.Writer) {
	t.Helper()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: 1 << 20}})
	require.NoError(t, err)
	q := &batchQuota{Quota: mq, hold: make(chan struct{})}
	q.let()
	w := newWriter(t, admission.WriterConfig{Linger: linger, Timeout: 2 * time.Minute, Queue: 1024})
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}},
		Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	return adm, q, w
}

func give(t *testing.T, adm *admission.SourceAdmission, o gate.Outcome) {
	t.Helper()
	tk, _, err := adm.Pick(bounded(t), nil, 1)
	require.NoError(t, err)
	require.NotNil(t, tk)
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: o, Tokens: -1}))
}

func (q *batchQuota) batches() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int(nil), q.sizes...)
}

// Outcomes that come one at a time, none of which can move the breaker,
// wait for the linger and go in one round trip: with a linger of a minute
// nothing is written until Close, which ends the wait at once and writes
// them all as one batch — not one per worker, though 8 are idle.
func TestWriterLingerWritesATrickleAsOneBatch(t *testing.T) {
	adm, q, w := lingerFixture(t, time.Minute)
	const n = 20
	for i := range n {
		o := gate.Success
		if i%2 == 1 {
			o = gate.Released
		}
		give(t, adm, o)
	}
	require.Zero(t, w.Stats().Written, "the round is still lingering")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Close(ctx), "Close ends the linger instead of waiting it out")
	require.Equal(t, []int{n}, q.batches())
	require.Equal(t, admission.WriterStats{Written: n}, w.Stats())
	require.Zero(t, q.InFlight("s1"))
}

// An outcome that can move the breaker — a Failure, a Fatal, a probe's — is
// never held back: it ends the lingering round, and the outcomes waiting
// in it are written with it.
func TestWriterUrgentOutcomeEndsTheLinger(t *testing.T) {
	for _, o := range []gate.Outcome{gate.Failure, gate.Fatal} {
		t.Run(o.String(), func(t *testing.T) {
			adm, q, w := lingerFixture(t, time.Minute)
			give(t, adm, gate.Success)
			// A round has taken it and lingers; the next ones wait in the
			// queue or join the round.
			eventually(t, "a round lingers with the first", func() bool { return w.Lingering() == 1 })
			for range 4 {
				give(t, adm, gate.Success)
			}
			require.Zero(t, w.Stats().Written)
			give(t, adm, o)
			eventually(t, "all six written before the linger's end", func() bool { return w.Stats().Written == 6 })
			total := 0
			for _, s := range q.batches() {
				total += s
			}
			require.Equal(t, 6, total)
		})
	}
}

// A full round's worth of outcomes (128) queued ends the linger too: under
// load the writer never waits.
func TestWriterFullRoundEndsTheLinger(t *testing.T) {
	adm, q, w := lingerFixture(t, time.Minute)
	// A round lingers with the first before the others come. (A worker
	// slow to take the first would take many at once, and a Done that read
	// the queue's length before that take and the round's count after it
	// would count them twice: the round, ended early, wrote fewer than 128,
	// and the rest, fewer than a round, waited out the minute.)
	give(t, adm, gate.Success)
	eventually(t, "a round lingers with the first", func() bool { return w.Lingering() == 1 })
	for range 199 {
		give(t, adm, gate.Success)
	}
	eventually(t, "a full round written before the linger's end", func() bool { return w.Stats().Written >= 128 })
	require.Equal(t, 128, q.batches()[0], "the first round was full")
}

// A negative linger writes each round as soon as it holds an outcome.
func TestWriterWithoutLingerWritesAtOnce(t *testing.T) {
	adm, _, w := lingerFixture(t, -1)
	give(t, adm, gate.Success)
	eventually(t, "written without Close", func() bool { return w.Stats().Written == 1 })
}

func TestNewWriterRejectsALingerNotBelowTheTimeout(t *testing.T) {
	for _, cfg := range []admission.WriterConfig{
		{Linger: time.Second, Timeout: time.Second},
		{Linger: 2 * time.Second}, // the default Timeout is 1 s
	} {
		_, err := admission.NewWriter(cfg)
		var ce *admission.ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", cfg, err)
		require.Contains(t, err.Error(), "Linger=")
		require.Contains(t, err.Error(), "below Timeout")
	}
	_, err := admission.NewWriter(admission.WriterConfig{Linger: time.Millisecond, Timeout: time.Millisecond})
	require.ErrorContains(t, err, "0 for 250µs", "the error names the default that fits this Timeout")
	w, err := admission.NewWriter(admission.WriterConfig{Timeout: time.Millisecond})
	require.NoError(t, err, "the default linger shrinks to fit a short Timeout")
	require.NoError(t, w.Close(bounded(t)))
}

// A probe's outcome, even a Success, is written without lingering, and
// ends a round that was lingering already: the next Pick waits for it, so a
// lingering round would hold that caller for the whole linger.
func TestWriterProbeOutcomeDoesNotLinger(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute})
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: 1 << 20}}) // no slot to free
	require.NoError(t, err)
	f := newFixture(t, withWriter(w), func(c *admission.Config) { c.Quota = mq })
	// A round lingers with an earlier call's Success.
	tk, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
	eventually(t, "a round lingers with it", func() bool { return w.Lingering() == 1 })
	require.Zero(t, w.Stats().Written)

	f.open(t, "s1")
	f.clk.Advance(cooldown)
	probe, _, err := f.adm.Pick(bounded(t), nil, 10)
	require.NoError(t, err)
	require.True(t, probe.Decision.Probe)
	require.NoError(t, probe.Done(bounded(t), admission.Result{Outcome: gate.Success}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tk, _, err = f.adm.Pick(ctx, nil, 10)
	require.NoError(t, err, "the next Pick waited for a lingering round")
	require.NotNil(t, tk)
	require.Equal(t, gate.Closed, tk.Decision.State, "the probe's Success closed the breaker")
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success}))
}

// A queue shorter than a full round (Queue below 128) fills before the
// round could: the lingering round must then be woken, not left asleep
// while further outcomes are dropped and every worker idles.
func TestWriterLingerEndsWhenTheQueueIsFull(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: 1 << 20}})
	require.NoError(t, err)
	w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute, Queue: 4})
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	give(t, adm, gate.Success)
	eventually(t, "a round lingers with the first", func() bool { return w.Lingering() == 1 })
	for range 4 {
		give(t, adm, gate.Success) // the fourth fills the queue
	}
	eventually(t, "the full queue ended the linger", func() bool { return w.Stats().Written == 5 })
	require.Zero(t, w.Stats().Dropped)
}

// What a lingering round holds is still waiting to be written: Stats counts
// it as Queued, so that Written+Failed+Dropped+Queued accounts for every
// outcome handed over.
func TestWriterStatsCountALingeringRoundAsQueued(t *testing.T) {
	adm, _, w := lingerFixture(t, time.Minute)
	give(t, adm, gate.Success)
	eventually(t, "a round lingers with the first", func() bool { return w.Lingering() == 1 })
	give(t, adm, gate.Released)
	give(t, adm, gate.Success)
	require.Equal(t, admission.WriterStats{Queued: 3, Unwritten: 3}, w.Stats())
	require.NoError(t, w.Close(bounded(t)))
	require.Equal(t, admission.WriterStats{Written: 3}, w.Stats())
}

// Callers giving outcomes back from many goroutines while Close begins:
// once Close returns, every outcome handed over is counted once — written,
// failed or dropped — and nothing is left queued. Each caller's Pick after
// its own Failure waits for that Failure to be written, which the minute's
// linger must not delay.
func TestWriterLingerCloseAccountsForEveryOutcome(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1 << 30})
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1 << 20}, "s2": {MaxInFlight: 1 << 20}})
	require.NoError(t, err)
	w, err := admission.NewWriter(admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute, Queue: 64, Workers: 3})
	require.NoError(t, err)
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}, {Name: "s2"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	const callers, each = 8, 200
	var handed atomic.Int64
	closing := make(chan struct{})
	startClose := sync.OnceFunc(func() { close(closing) })
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if g == 0 {
				defer startClose() // a caller that failed early must not leave the test waiting
			}
			for i := range each {
				if g == 0 && i == each/2 {
					startClose()
				}
				tk, _, err := adm.Pick(ctx, nil, 1)
				if !assert.NoError(t, err, "a Pick waited for a lingering round") || tk == nil {
					return
				}
				o := []gate.Outcome{gate.Success, gate.Released, gate.Failure, gate.Success}[(g+i)%4]
				handed.Add(1)
				_ = tk.Done(ctx, admission.Result{Outcome: o, Tokens: -1})
			}
		})
	}
	<-closing
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Close(ctx))
	wg.Wait()
	st := w.Stats()
	require.Zero(t, st.Queued)
	require.Zero(t, st.Failed)
	require.EqualValues(t, handed.Load(), st.Written+st.Dropped)
	require.EqualValues(t, st.Dropped, q.InFlight("s1")+q.InFlight("s2"), "a dropped outcome's slot alone is left")
}

// A caller that calls again as soon as its call returned must not be
// refused its own finished call's in-flight slot because the outcome that
// frees it lingers in the writer (or has not been written yet): Pick,
// refused the source's slots while such an outcome of its own waits in the
// writer, ends the linger, waits for the write and asks again. With a
// MaxInFlight of 1 every serial call after the first was refused.
func TestPickWaitsForItsOwnSlotInTheWriter(t *testing.T) {
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	q, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}})
	require.NoError(t, err)
	w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute})
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		tk, rej, err := adm.Pick(ctx, nil, 1)
		require.NoError(t, err)
		require.NotNil(t, tk, "call %d refused its own slot: %v", i, rej)
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
		eventually(t, "a round lingers with the outcome", func() bool { return w.Lingering() == 1 })
		require.Equal(t, 1, q.InFlight("s1"), "the slot waits in the writer")
	}
	// A slot another call holds is refused as before, without a wait.
	tk, _, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	require.NotNil(t, tk)
	other, rej, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, err)
	require.Nil(t, other)
	require.Equal(t, admission.RateLimited, rej[0].Reason)
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
}

// refusalQuota is a memory quota whose combined admission signals each
// refusal.
type refusalQuota struct {
	*memory.Quota
	refused  chan struct{}
	onRefuse func() // run before a refusal returns, when not nil
}

func (q *refusalQuota) Admit(ctx context.Context, b gate.ProviderGate, source string, est int64) (gate.Decision, gate.Permit, gate.QuotaDecision, bool, error) {
	d, p, qd, ok, err := q.Quota.Admit(ctx, b, source, est)
	if ok && d.Allowed && !qd.Allowed {
		if q.onRefuse != nil {
			q.onRefuse()
		}
		select {
		case q.refused <- struct{}{}:
		default:
		}
	}
	return d, p, qd, ok, err
}

// The outcome that frees the slot may not have reached a round yet when
// Pick is refused (every worker busy): the round that takes it must not
// linger, or Pick waits out the whole linger.
func TestPickWaitsForItsOwnSlotNotYetTakenByARound(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute, Workers: 1})
	// Another scope's Failure keeps the only worker busy until released.
	adm, stalled, q := stalledWorker(t, w)
	give(t, adm, gate.Success) // queued behind the stalled write
	require.Equal(t, 1, w.Stats().Queued)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	picked := make(chan *admission.Ticket, 1)
	go func() {
		tk, _, err := adm.Pick(ctx, nil, 1)
		assert.NoError(t, err)
		picked <- tk
	}()
	await(t, q.refused, "the source's refusal of the Pick")
	eventually(t, "the refused Pick asked the writer to hurry", w.Hurried)
	stalled.let()
	tk := await(t, picked, "the refused Pick")
	require.NotNil(t, tk, "Pick waited out the linger or was refused its own slot")
	require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success, Tokens: -1}))
}

// The outcome that frees the slot may be written between the quota's
// refusal and Pick's look at the writer: nothing of the source waits in the
// writer any more, yet the refusal is stale, and the source is asked again.
func TestPickAsksAgainWhenItsSlotWasWrittenMeanwhile(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: -1, Workers: 1})
	stalled := holdTheWorker(t, w)
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}})
	require.NoError(t, err)
	q := &refusalQuota{Quota: mq, refused: make(chan struct{}, 1)}
	q.onRefuse = func() {
		q.onRefuse = nil
		stalled.let()
		eventually(t, "both outcomes written", func() bool { return w.Stats().Written == 2 })
	}
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	give(t, adm, gate.Success) // queued behind the stalled write
	tk, rej, err := adm.Pick(bounded(t), nil, 1)
	require.NoError(t, err)
	require.NotNil(t, tk, "refused a slot written meanwhile: %v", rej)
	require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success, Tokens: -1}))
}

// An observer that starts a call of the source when it hears the source's
// breaker close finds the probe's slot given back: the writer tells the
// observer last, so the call neither waits for the observer's own return
// nor is refused the slot.
func TestWriterObserverCallFindsTheProbesSlotFree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quota func(*memory.Quota) gate.QuotaGate
	}{
		{"Concluder", func(q *memory.Quota) gate.QuotaGate { return q }},
		{"RecordThenFinish", func(q *memory.Quota) gate.QuotaGate { return plainQuota{q} }}, // exits_test.go
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testutil.NewFakeClock()
			b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute}, memory.WithClock(clk))
			require.NoError(t, err)
			mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}})
			require.NoError(t, err)
			w := newWriter(t, admission.WriterConfig{Linger: time.Minute, Timeout: 2 * time.Minute})
			var adm *admission.SourceAdmission
			got := make(chan *admission.Ticket, 1)
			obs := observe.Funcs{StateChange: func(v observe.StateChange) {
				if v.To != gate.Closed {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				tk, _, _ := adm.Pick(ctx, nil, 1)
				got <- tk
			}}
			adm, err = admission.New(admission.Config{
				Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: tc.quota(mq),
				Writer: w, Clock: clk, Observer: obs,
			})
			require.NoError(t, err)
			give(t, adm, gate.Failure)
			eventually(t, "the Failure opened the breaker", func() bool { return w.Stats().Written == 1 })
			clk.Advance(2 * time.Minute)
			probe, rej, err := adm.Pick(bounded(t), nil, 1)
			require.NoError(t, err)
			require.NotNil(t, probe, "%v", rej)
			require.True(t, probe.Decision.Probe)
			require.NoError(t, probe.Done(bounded(t), admission.Result{Outcome: gate.Success, Tokens: -1}))
			tk := await(t, got, "the observer's call")
			require.NotNil(t, tk, "the observer's call was refused the probe's slot")
			require.NoError(t, tk.Done(bounded(t), admission.Result{Outcome: gate.Success, Tokens: -1}))
		})
	}
}

// An observer that starts a call when it hears of a change hears of it
// once every outcome of the writer's round is written. Its call may wait for
// one of them — a Failure of the source, which Pick's ordering waits for —
// and the worker that would write it is the observer's own goroutine: told
// in the middle of the round, the call waited out its ctx. The round here
// is two Failures of s1, given back Record by Record (no quota gate to
// conclude them together), or a Failure of each of two scopes.
func TestWriterObserverCallDoesNotWaitForItsOwnRound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameScope bool
	}{
		{"SameScope", true},
		{"AnotherScope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriter(t, admission.WriterConfig{Linger: -1, Workers: 1})
			stalled := holdTheWorker(t, w)
			newScope := func(scope string, quota gate.QuotaGate, obs observe.Observer) *admission.SourceAdmission {
				b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute})
				require.NoError(t, err)
				adm, err := admission.New(admission.Config{
					Scope: scope, Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: quota,
					Writer: w, Observer: obs,
				})
				require.NoError(t, err)
				return adm
			}
			var asked *admission.SourceAdmission // the scope the observer's call asks
			got := make(chan error, 1)
			obs := observe.Funcs{StateChange: func(v observe.StateChange) {
				if v.Scope != "CHAT" || v.To != gate.Open {
					return
				}
				ctx, cancel := context.WithTimeout(t.Context(), bound/2)
				defer cancel()
				_, _, err := asked.Pick(ctx, nil, 1)
				select {
				case got <- err:
				default:
				}
			}}
			var quota gate.QuotaGate // none: the writer gives each outcome back by itself
			if !tc.sameScope {
				mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {RPM: 1 << 20}})
				require.NoError(t, err)
				quota = mq // a Concluder: the scope's outcomes are given back together
			}
			chat := newScope("CHAT", quota, obs)
			asked = chat
			if !tc.sameScope {
				asked = newScope("LATER", nil, nil)
			}
			// Both admitted before either is given back: the second waits
			// for no Failure.
			first, _, err := chat.Pick(bounded(t), nil, 1)
			require.NoError(t, err)
			second, _, err := asked.Pick(bounded(t), nil, 1)
			require.NoError(t, err)
			require.NoError(t, first.Done(bounded(t), admission.Result{Outcome: gate.Failure, Tokens: -1}))
			require.NoError(t, second.Done(bounded(t), admission.Result{Outcome: gate.Failure, Tokens: -1}))
			require.Equal(t, 2, w.Stats().Queued, "queued behind the held write: the next round takes both")
			stalled.let()
			require.NoError(t, await(t, got, "the observer's call"),
				"the observer's call waited for an outcome of the round that told it")
		})
	}
}

// degradedBreaker is a breaker whose store reports an outage (Degrader).
type degradedBreaker struct{ gate.ProviderGate }

func (degradedBreaker) Degraded() bool { return true }

// During an outage of the breaker's store Pick does not wait for its own
// slot in the writer, which may try the store for its whole write timeout:
// the refusal stands, as for any other source whose slots are taken.
func TestPickDoesNotWaitForItsSlotDuringAnOutage(t *testing.T) {
	w := newWriter(t, admission.WriterConfig{Linger: -1, Workers: 1})
	stalled := holdTheWorker(t, w)
	defer stalled.let()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}})
	require.NoError(t, err)
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: degradedBreaker{b}, Quota: mq, Writer: w,
	})
	require.NoError(t, err)
	give(t, adm, gate.Success) // queued behind the stalled write
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tk, rej, err := adm.Pick(ctx, nil, 1)
	require.NoError(t, ctx.Err(), "Pick waited for the writer during an outage")
	require.NoError(t, err)
	require.Nil(t, tk)
	require.Equal(t, admission.RateLimited, rej[0].Reason)
}

// stalledWorker is w, whose only worker is kept busy writing another
// scope's Failure until stalled.hold is closed, and a CHAT scope of one
// source with MaxInFlight 1 on w whose quota reports its refusals.
func stalledWorker(t *testing.T, w *admission.Writer) (adm *admission.SourceAdmission, stalled *batchQuota, q *refusalQuota) {
	t.Helper()
	stalled = holdTheWorker(t, w)
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	mq, err := memory.NewQuota(map[string]gate.Limits{"s1": {MaxInFlight: 1}})
	require.NoError(t, err)
	q = &refusalQuota{Quota: mq, refused: make(chan struct{}, 1)}
	adm, err = admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: b, Quota: q, Writer: w,
	})
	require.NoError(t, err)
	return adm, stalled, q
}

// holdTheWorker keeps w's only worker busy writing another scope's Failure
// until the returned quota lets it go (let; the test's cleanup does too,
// before it closes w).
//
// It returns once the worker is inside that write, its round over: an
// outcome given back from then on waits in the queue. (The queue's being
// empty does not tell: the worker may have taken the Failure and not yet
// looked at the queue again, and would then write the next outcome in the
// same round.)
func holdTheWorker(t *testing.T, w *admission.Writer) *batchQuota {
	t.Helper()
	ob, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1000})
	require.NoError(t, err)
	oq, err := memory.NewQuota(map[string]gate.Limits{"x": {RPM: 1 << 20}})
	require.NoError(t, err)
	stalled := &batchQuota{Quota: oq, hold: make(chan struct{}), entered: make(chan struct{})}
	t.Cleanup(stalled.let) // runs before w's Close (newWriter's cleanup came first)
	other, err := admission.New(admission.Config{
		Scope: "OTHER", Sources: []admission.Source{{Name: "x"}}, Breaker: ob, Quota: stalled, Writer: w,
	})
	require.NoError(t, err)
	give(t, other, gate.Failure)
	await(t, stalled.entered, "the worker writes the Failure")
	return stalled
}
