package admission_test

import (
	"context"
	"log/slog"
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

// events records every observe event in arrival order.
type events struct {
	mu  sync.Mutex
	all []any
}

func (e *events) add(v any) { e.mu.Lock(); e.all = append(e.all, v); e.mu.Unlock() }

func (e *events) observer() observe.Funcs {
	return observe.Funcs{
		Attempt:      func(v observe.AttemptRecord) { e.add(v) },
		StateChange:  func(v observe.StateChange) { e.add(v) },
		AttemptStart: func(v observe.AttemptStart) { e.add(v) },
		Rejection:    func(v observe.Rejection) { e.add(v) },
		WaitStart:    func(v observe.WaitStart) { e.add(v) },
		WaitEnd:      func(v observe.WaitEnd) { e.add(v) },
		Call:         func(v observe.CallResult) { e.add(v) },
	}
}

func (e *events) changes() []observe.StateChange {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []observe.StateChange
	for _, v := range e.all {
		if c, ok := v.(observe.StateChange); ok {
			out = append(out, c)
		}
	}
	return out
}

func (e *events) snapshot() []any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]any(nil), e.all...)
}

// snapGate counts Snapshot reads and can answer TryEnter with a canned
// decision, as a decision that was made before a concurrent change.
type snapGate struct {
	gate.ProviderGate
	snaps  atomic.Int64
	canned *gate.Decision
}

func (g *snapGate) Snapshot(ctx context.Context, s string) (gate.Snapshot, error) {
	g.snaps.Add(1)
	return g.ProviderGate.Snapshot(ctx, s)
}

func (g *snapGate) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	if g.canned != nil {
		return *g.canned, nil
	}
	return g.ProviderGate.TryEnter(ctx, s)
}

// observed is one source on a memory breaker (3 failures trip it) with an
// event recorder.
type observed struct {
	clk *testutil.FakeClock
	b   *memory.Breaker
	g   *snapGate
	ev  *events
	adm *admission.SourceAdmission
}

func newObserved(t *testing.T) *observed {
	t.Helper()
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 3, Cooldown: cooldown, MaxCooldown: 4 * cooldown, ProbeTTL: probeTTL},
		memory.WithClock(clk))
	require.NoError(t, err)
	o := &observed{clk: clk, b: b, g: &snapGate{ProviderGate: b}, ev: &events{}}
	o.adm, err = admission.New(admission.Config{
		Scope:    "CHAT",
		Sources:  []admission.Source{{Name: "s1"}},
		Breaker:  o.g,
		Clock:    clk,
		Sleep:    (&fakeSleep{clk: clk}).sleep,
		Rand:     func() float64 { return 0.5 },
		Logger:   slog.New(&logSink{}),
		Observer: o.ev.observer(),
	})
	require.NoError(t, err)
	return o
}

// attempt picks s1 and gives the ticket back with outcome o.
func (o *observed) attempt(t *testing.T, out gate.Outcome) *admission.Ticket {
	t.Helper()
	tk, _, err := o.adm.Pick(context.Background(), nil, 0)
	require.NoError(t, err)
	require.NotNil(t, tk, "s1 must be admitted")
	require.NoError(t, tk.Done(context.Background(), admission.Result{Outcome: out}))
	return tk
}

func TestStateChangeCarriesTheCountsThatCausedIt(t *testing.T) {
	o := newObserved(t)
	o.attempt(t, gate.Success)
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	ch := o.ev.changes()
	require.Len(t, ch, 1)
	c := ch[0]
	assert.Equal(t, "CHAT", c.Scope)
	assert.Equal(t, "s1", c.Source)
	assert.Equal(t, gate.Closed, c.From)
	assert.Equal(t, gate.Open, c.To)
	assert.Equal(t, observe.Counts{Successes: 1, Failures: 3, ConsecutiveFailures: 3}, c.Counts,
		"the gate cleared its counts at the trip; the event still has them")
	assert.Equal(t, cooldown, c.RetryAfter)
	assert.Equal(t, gate.Open, c.Gate.State)
	assert.Equal(t, c.Gate.Generation, c.Generation)
	assert.Equal(t, o.clk.Now(), c.At)

	// Cooldown over: the probe shows HalfOpen, its success Closed.
	o.clk.Advance(cooldown)
	o.attempt(t, gate.Success)
	ch = o.ev.changes()
	require.Len(t, ch, 3)
	assert.Equal(t, [2]gate.State{gate.Open, gate.HalfOpen}, [2]gate.State{ch[1].From, ch[1].To})
	assert.Equal(t, observe.Counts{}, ch[1].Counts)
	assert.Equal(t, [2]gate.State{gate.HalfOpen, gate.Closed}, [2]gate.State{ch[2].From, ch[2].To})
	assert.Equal(t, observe.Counts{Successes: 1}, ch[2].Counts)
	assert.Less(t, ch[0].Generation, ch[1].Generation)
	assert.Less(t, ch[1].Generation, ch[2].Generation)
}

// Reading the record costs one Snapshot per transition seen; Closed calls
// cost none.
func TestStateChangesCostOneSnapshotPerTransitionSeen(t *testing.T) {
	o := newObserved(t)
	for range 100 {
		o.attempt(t, gate.Success)
	}
	assert.Zero(t, o.g.snaps.Load(), "Closed admissions and successes read no snapshot")
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	assert.Equal(t, int64(1), o.g.snaps.Load())
	for range 10 {
		tk, rej, err := o.adm.Pick(context.Background(), nil, 0)
		require.NoError(t, err)
		require.Nil(t, tk)
		require.Len(t, rej, 1)
	}
	assert.Equal(t, int64(1), o.g.snaps.Load(), "rejections in the state already seen read nothing")

	// The probe (half_open) and its success (closed): one read each; the
	// Closed admissions after it, at the new generation, none.
	o.clk.Advance(cooldown)
	o.attempt(t, gate.Success)
	assert.Equal(t, int64(3), o.g.snaps.Load())
	for range 100 {
		o.attempt(t, gate.Success)
	}
	assert.Equal(t, int64(3), o.g.snaps.Load(), "Closed admissions of a known generation read no snapshot")
}

// A Closed admission decided before a concurrent Record opened the breaker
// arrives after the change was seen: it must not be reported as open→closed.
func TestStaleClosedAdmissionInventsNoChange(t *testing.T) {
	o := newObserved(t)
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	require.Len(t, o.ev.changes(), 1)
	o.g.canned = &gate.Decision{Allowed: true, State: gate.Closed, Token: 0} // generation 0: before the trip
	o.attempt(t, gate.Success)                                               // its Record is a fencing miss
	assert.Len(t, o.ev.changes(), 1, "no change invented")
}

func TestOperatorOverridesAreSeenAsStateChanges(t *testing.T) {
	o := newObserved(t)
	ctx := context.Background()
	o.attempt(t, gate.Success)

	require.NoError(t, o.b.Force(ctx, "s1", gate.ForceOpen))
	tk, rej, err := o.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Nil(t, tk)
	assert.Equal(t, admission.Rejections{{Source: "s1", Reason: admission.CircuitOpen}}, rej, "forced Open: RetryAfter 0")

	require.NoError(t, o.b.Force(ctx, "s1", gate.ForceClosed))
	o.attempt(t, gate.Success)
	require.NoError(t, o.b.Force(ctx, "s1", gate.ForceNone))
	o.attempt(t, gate.Success)

	ch := o.ev.changes()
	require.Len(t, ch, 3)
	type step struct {
		From, To gate.State
		Forced   gate.Force
	}
	var got []step
	for _, c := range ch {
		got = append(got, step{c.From, c.To, c.Forced})
	}
	assert.Equal(t, []step{
		{gate.Closed, gate.Open, gate.ForceOpen},
		{gate.Open, gate.Closed, gate.ForceClosed},
		{gate.Closed, gate.Closed, gate.ForceNone}, // the override cleared: same state, news all the same
	}, got)
	assert.Equal(t, time.Duration(0), ch[0].RetryAfter)
}

func TestRejectionsAndWaitsAreReported(t *testing.T) {
	ev := &events{}
	f := newFixture(t, withModes(admission.Wait, admission.Wait),
		withSources(admission.Source{Name: "s1"}, admission.Source{Name: "s2"}),
		func(c *admission.Config) { c.Observer = ev.observer() })
	f.open(t, "s1")
	f.quota.setReject("s2", 2*time.Second)
	f.sleeper.onNap = func(n int) {
		if n == 2 {
			f.quota.clear("s2")
		}
	}
	tk, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	require.NoError(t, err)
	assert.Equal(t, "s2", tk.Source)

	var rejs []observe.Rejection
	var starts []observe.WaitStart
	var ends []observe.WaitEnd
	for _, v := range ev.snapshot() {
		switch v := v.(type) {
		case observe.Rejection:
			rejs = append(rejs, v)
		case observe.WaitStart:
			starts = append(starts, v)
		case observe.WaitEnd:
			ends = append(ends, v)
		}
	}
	require.NotEmpty(t, rejs)
	byReason := map[string]observe.Rejection{}
	for _, r := range rejs {
		assert.Equal(t, "CHAT", r.Scope)
		byReason[r.Source+"/"+r.Reason] = r
	}
	assert.Equal(t, cooldown, byReason["s1/circuit_open"].RetryAfter, "first round: the breaker's RetryAfter")
	assert.Equal(t, "rpm", byReason["s2/rate_limited"].Limit, "the quota names its limit")
	assert.Equal(t, 2*time.Second, byReason["s2/rate_limited"].RetryAfter)
	_, memo := byReason["s1/cooldown"]
	assert.True(t, memo, "later rounds: the memo's cooldown")

	require.Len(t, starts, 1, "one wait, however many naps")
	require.Len(t, ends, 1)
	assert.Equal(t, "quota_full", starts[0].Reason)
	assert.Equal(t, map[string]string{"s1": "circuit_open", "s2": "rate_limited"}, starts[0].Reasons)
	assert.Equal(t, 2*time.Second, starts[0].RetryAfter, "expected: the earliest certain wait")
	naps := f.sleeper.taken()
	assert.Equal(t, naps[0], starts[0].Nap)
	assert.Equal(t, "s2", ends[0].Source)
	assert.NoError(t, ends[0].Err)
	assert.Equal(t, len(naps), ends[0].Naps)
	assert.Equal(t, naps[0]+naps[1], ends[0].Waited, "actual: the naps slept")
	assert.Equal(t, 2*time.Second, ends[0].RetryAfter)
}

func TestWaitEndReportsTheErrorThatEndedIt(t *testing.T) {
	ev := &events{}
	f := newFixture(t, withModes(admission.Wait, admission.Wait), func(c *admission.Config) { c.Observer = ev.observer() })
	require.NoError(t, f.breaker.Force(context.Background(), "s1", gate.ForceOpen))
	_, err := f.run(context.Background(), f.adm.NewCall(f.stall()), succeed)
	require.Error(t, err)
	var end *observe.WaitEnd
	for _, v := range ev.snapshot() {
		if e, ok := v.(observe.WaitEnd); ok {
			end = &e
		}
	}
	require.NotNil(t, end)
	assert.Empty(t, end.Source)
	assert.ErrorIs(t, end.Err, err)
	assert.Equal(t, "circuit_open", end.Reason)
	assert.Greater(t, end.Waited, window, "stalled: waited out the stall window")
}

// A Redis record that expired while idle comes back as a fresh Closed record
// at generation 0: it is still news when the last state seen was Open.
func TestRecordThatStartsOverAtGenerationZeroIsSeen(t *testing.T) {
	o := newObserved(t)
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	require.Len(t, o.ev.changes(), 1)
	fresh, err := memory.NewBreaker(gate.Policy{}, memory.WithClock(o.clk))
	require.NoError(t, err)
	o.g.ProviderGate = fresh // the record expired
	o.attempt(t, gate.Success)
	ch := o.ev.changes()
	require.Len(t, ch, 2)
	assert.Equal(t, [2]gate.State{gate.Open, gate.Closed}, [2]gate.State{ch[1].From, ch[1].To})
	assert.Zero(t, ch[1].Generation)
}
