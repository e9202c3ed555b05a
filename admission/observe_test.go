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
	"github.com/pgw-go/pgw/gate/redis"
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

// snap reads s1's record from the breaker itself (not counted).
func (o *observed) snap(t *testing.T) gate.Snapshot {
	t.Helper()
	s, err := o.b.Snapshot(context.Background(), "s1")
	require.NoError(t, err)
	return s
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
	assert.Equal(t, cooldown, c.RetryAfter, "seen in the answer that opened it: the whole cooldown")
	assert.Equal(t, o.snap(t).Generation, c.Generation)
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

// Every answer carries the record's generation, state and override, so
// seeing a transition costs no gate operation: not for Closed calls, not for
// rejections, not for the trip, the probe or the close (budget: a waiting
// call ≤ 2 gate queries per cooldown).
func TestStateChangesReadNoSnapshot(t *testing.T) {
	o := newObserved(t)
	for range 100 {
		o.attempt(t, gate.Success)
	}
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	for range 10 {
		tk, rej, err := o.adm.Pick(context.Background(), nil, 0)
		require.NoError(t, err)
		require.Nil(t, tk)
		require.Len(t, rej, 1)
	}
	o.clk.Advance(cooldown)
	o.attempt(t, gate.Success) // the probe (half_open) and its success (closed)
	for range 100 {
		o.attempt(t, gate.Success)
	}
	assert.Len(t, o.ev.changes(), 3, "closed → open → half_open → closed")
	assert.Zero(t, o.g.snaps.Load(), "every change was told by the answer that showed it")
}

// A Closed admission decided before a concurrent Record opened the breaker
// arrives after the change was seen: it must not be reported as open→closed.
func TestStaleClosedAdmissionInventsNoChange(t *testing.T) {
	o := newObserved(t)
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	require.Len(t, o.ev.changes(), 1)
	o.g.canned = &gate.Decision{Allowed: true, State: gate.Closed} // generation 0: before the trip
	o.attempt(t, gate.Success)                                     // its Record is a fencing miss
	assert.Len(t, o.ev.changes(), 1, "no change invented")
	assert.Equal(t, int64(1), o.g.snaps.Load(), "a lower generation in another state is judged by the record")
}

// A probe grant that raced the probe's own success reaches the watch after
// the close was seen: a lower generation, HalfOpen. It must not be reported
// as closed → half_open, nor make the next answer report half_open → closed.
func TestStaleProbeGrantInventsNoChange(t *testing.T) {
	o := newObserved(t)
	for range 3 {
		o.attempt(t, gate.Failure)
	}
	o.clk.Advance(cooldown)
	tk := o.attempt(t, gate.Success)
	require.True(t, tk.Decision.Probe)
	require.Len(t, o.ev.changes(), 3)
	stale := tk.Decision
	o.g.canned = &stale
	tk2, _, err := o.adm.Pick(context.Background(), nil, 0)
	require.NoError(t, err)
	o.g.canned = nil
	require.NoError(t, tk2.Done(context.Background(), admission.Result{Outcome: gate.Released}))
	o.attempt(t, gate.Success)
	assert.Len(t, o.ev.changes(), 3, "no change invented")
}

// Overrides are in every answer (Decision.Forced, Update.Forced): they are
// reported as changes, the lifted ones too, without reading the record.

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
	assert.Zero(t, o.g.snaps.Load())
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
	reads := o.g.snaps.Load()
	assert.Equal(t, int64(1), reads, "generation 0 after 1 is judged by the record, once")
	for range 10 {
		o.attempt(t, gate.Success)
	}
	assert.Equal(t, reads, o.g.snaps.Load(), "the new record's answers then compare without a read")
}

// switchable is a breaker gate standing for Redis in a Failover: while down
// every call fails as an unreachable Redis does.
type switchable struct {
	gate.ProviderGate
	down atomic.Bool
}

type unreachable struct{}

func (unreachable) Error() string        { return "redis is unreachable (test)" }
func (unreachable) Is(target error) bool { return target == redis.ErrUnreachable }

func (g *switchable) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	if g.down.Load() {
		return gate.Decision{}, unreachable{}
	}
	return g.ProviderGate.TryEnter(ctx, s)
}

func (g *switchable) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if g.down.Load() {
		return gate.Update{}, unreachable{}
	}
	return g.ProviderGate.Record(ctx, s, d, o)
}

func (g *switchable) Snapshot(ctx context.Context, s string) (gate.Snapshot, error) {
	if g.down.Load() {
		return gate.Snapshot{}, unreachable{}
	}
	return g.ProviderGate.Snapshot(ctx, s)
}

// A Failover answers from two records (Redis, its local fallback) whose
// generations do not compare. The switch is judged by reading the record —
// once per switch — and an answer of the other record that comes after it
// (a call admitted by the fallback, recorded after Redis is back) is no
// news: the watch does not flap back to the fallback's state.
func TestFailoverSwitchesAreJudgedByTheRecordWithoutFlapping(t *testing.T) {
	clk := testutil.NewFakeClock()
	p := gate.Policy{ConsecutiveFailures: 3, Cooldown: cooldown, MaxCooldown: 4 * cooldown, ProbeTTL: probeTTL}
	primary, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	fallback, err := memory.NewBreaker(p, memory.WithClock(clk))
	require.NoError(t, err)
	sw := &switchable{ProviderGate: primary}
	fo, err := redis.NewFailover(sw, fallback, redis.FailOpen, slog.New(&logSink{}), redis.WithRetryInterval(0))
	require.NoError(t, err)
	o := &observed{clk: clk, b: primary, g: &snapGate{ProviderGate: fo}, ev: &events{}}
	o.adm, err = admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: o.g, Clock: clk,
		Sleep: (&fakeSleep{clk: clk}).sleep, Rand: func() float64 { return 0.5 },
		Logger: slog.New(&logSink{}), Observer: o.ev.observer(),
	})
	require.NoError(t, err)
	ctx := context.Background()
	for range 5 { // the fallback's generations run ahead of Redis's
		require.NoError(t, fallback.Force(ctx, "s1", gate.ForceNone))
	}

	for range 3 {
		o.attempt(t, gate.Failure) // Redis opens
	}
	sw.down.Store(true) // the fallback, Closed, serves
	o.attempt(t, gate.Success)
	held, _, err := o.adm.Pick(ctx, nil, 0) // a fallback admission in flight
	require.NoError(t, err)
	require.NotNil(t, held)
	sw.down.Store(false) // Redis is back, still Open
	tk, _, err := o.adm.Pick(ctx, nil, 0)
	require.NoError(t, err)
	require.Nil(t, tk, "Redis is Open")
	require.NoError(t, held.Done(ctx, admission.Result{Outcome: gate.Success})) // the fallback answers, Closed
	o.clk.Advance(cooldown)
	o.attempt(t, gate.Success) // Redis probes and closes

	var got [][2]gate.State
	for _, c := range o.ev.changes() {
		got = append(got, [2]gate.State{c.From, c.To})
	}
	assert.Equal(t, [][2]gate.State{
		{gate.Closed, gate.Open},     // Redis trips
		{gate.Open, gate.Closed},     // the fallback serves
		{gate.Closed, gate.Open},     // Redis is back
		{gate.Open, gate.HalfOpen},   // its probe
		{gate.HalfOpen, gate.Closed}, // its close
	}, got, "no flap back to the fallback's Closed")
	assert.Equal(t, int64(3), o.g.snaps.Load(), "one read per switch of record, one for the late fallback answer")
}

// witness keeps every (generation, state, override) the gate answered, so a
// test can tell a reported state from an invented one.
type witness struct {
	gate.ProviderGate
	mu   sync.Mutex
	seen map[[3]uint64]bool
}

func (g *witness) saw(gen uint64, st gate.State, f gate.Force) {
	g.mu.Lock()
	g.seen[[3]uint64{gen, uint64(st), uint64(f)}] = true
	g.mu.Unlock()
}

func (g *witness) real(c observe.StateChange) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[[3]uint64{c.Generation, uint64(c.To), uint64(c.Forced)}]
}

func (g *witness) TryEnter(ctx context.Context, s string) (gate.Decision, error) {
	d, err := g.ProviderGate.TryEnter(ctx, s)
	g.saw(d.Generation, d.State, d.Forced)
	return d, err
}

func (g *witness) Record(ctx context.Context, s string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	u, err := g.ProviderGate.Record(ctx, s, d, o)
	g.saw(u.Generation, u.State, u.Forced)
	return u, err
}

func (g *witness) Snapshot(ctx context.Context, s string) (gate.Snapshot, error) {
	sn, err := g.ProviderGate.Snapshot(ctx, s)
	g.saw(sn.Generation, sn.State, sn.Forced)
	return sn, err
}

// Calls racing through trips, probes, closes and overrides: the changes
// reported form one chain (each From the previous To) of real records in
// growing generations, and once the calls stop, the next answer brings the
// chain to the record's state.
func TestConcurrentAnswersReportOneChainOfRealStates(t *testing.T) {
	clk := testutil.NewFakeClock()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 2, Cooldown: 10 * time.Millisecond, MaxCooldown: 40 * time.Millisecond, ProbeTTL: time.Second},
		memory.WithClock(clk))
	require.NoError(t, err)
	g := &witness{ProviderGate: b, seen: map[[3]uint64]bool{}}
	ev := &events{}
	adm, err := admission.New(admission.Config{
		Scope: "CHAT", Sources: []admission.Source{{Name: "s1"}}, Breaker: g, Clock: clk,
		Sleep: (&fakeSleep{clk: clk}).sleep, Rand: func() float64 { return 0.5 },
		Logger: slog.New(&logSink{}), Observer: ev.observer(),
	})
	require.NoError(t, err)
	ctx := context.Background()

	const workers, rounds = 4, 400
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				if w == 0 && i%100 == 50 {
					require.NoError(t, b.Force(ctx, "s1", gate.ForceOpen))
				}
				if w == 0 && i%100 == 60 {
					require.NoError(t, b.Force(ctx, "s1", gate.ForceNone))
				}
				tk, _, err := adm.Pick(ctx, nil, 0)
				if !assert.NoError(t, err) {
					return
				}
				if tk == nil {
					clk.Advance(3 * time.Millisecond)
					continue
				}
				// Two failures in every six rounds of each worker: they
				// trip the breaker (ConsecutiveFailures 2) even when the
				// scheduler runs the workers one after another.
				out := gate.Success
				if (i+w)%6 < 2 {
					out = gate.Failure
				}
				assert.NoError(t, tk.Done(ctx, admission.Result{Outcome: out}))
			}
		})
	}
	wg.Wait()

	// One more answer, alone: the record as it stands.
	clk.Advance(time.Minute)
	if tk, _, err := adm.Pick(ctx, nil, 0); assert.NoError(t, err) && tk != nil {
		assert.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Released}))
	}

	// What the run must have done whatever the scheduling: worker 0's own
	// Picks after each of its 8 overrides see them (8 changes), and the
	// failures trip the breaker at least once on their own. How many more
	// changes the racing workers see depends on how the scheduler
	// interleaves them (18 to over 80 under load).
	ch := ev.changes()
	require.GreaterOrEqual(t, len(ch), 8, "the 8 overrides alone make 8 changes")
	trips := 0
	for _, c := range ch {
		if c.To == gate.Open && c.Forced == gate.ForceNone {
			trips++
		}
	}
	require.Positive(t, trips, "the failures tripped the breaker")
	from, fromForced, gen := gate.Closed, gate.ForceNone, uint64(0)
	for k, c := range ch {
		assert.Equal(t, from, c.From, "change %d: From is the previous To", k)
		assert.True(t, c.To != from || c.Forced != fromForced, "change %d: %v→%v (forced %v) is no change", k, c.From, c.To, c.Forced)
		assert.Greater(t, c.Generation, gen, "change %d: generations grow", k)
		assert.True(t, g.real(c), "change %d: %v at generation %d (forced %v) was never a state of the record", k, c.To, c.Generation, c.Forced)
		from, fromForced, gen = c.To, c.Forced, c.Generation
	}
	s, err := b.Snapshot(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, s.State, from, "the last change reported is the record's state")
	assert.Equal(t, s.Forced, fromForced)
}

// The budget of a waiting call, ≤ 2 gate queries per cooldown, with the state
// changes reported: a single source whose probes fail three times before one
// succeeds costs its call one Open rejection and one probe per cooldown and
// not one Snapshot, though the watch reports every transition.
func TestALongWaitAsksTheGateTwicePerCooldownAndReadsNoSnapshot(t *testing.T) {
	sg := &snapGate{}
	ev := &events{}
	f := newFixture(t, withModes(admission.Wait, admission.Wait), func(c *admission.Config) {
		sg.ProviderGate = c.Breaker
		c.Breaker = sg
		c.Observer = ev.observer()
	})
	f.open(t, "s1")
	const failedProbes = 3
	probes := 0
	long := &fakeStall{clk: f.clk, start: f.clk.Now(), window: time.Hour} // 60+120+240+240 s of cooldowns
	tk, err := f.run(context.Background(), f.adm.NewCall(long), func(tk *admission.Ticket) (admission.Result, bool) {
		require.True(t, tk.Decision.Probe, "every admission of the wait is a probe")
		if probes++; probes <= failedProbes {
			return admission.Result{Outcome: gate.Failure}, false
		}
		return admission.Result{Outcome: gate.Success}, true
	})
	require.NoError(t, err)
	require.Equal(t, "s1", tk.Source)
	cooldowns := int64(failedProbes + 1)
	assert.Equal(t, 2*cooldowns, f.gate.queries(), "one Open rejection and one probe per cooldown")
	assert.Zero(t, sg.snaps.Load())
	var got [][2]gate.State
	for _, c := range ev.changes() {
		got = append(got, [2]gate.State{c.From, c.To})
	}
	want := [][2]gate.State{{gate.Closed, gate.Open}}
	for range failedProbes {
		want = append(want, [2]gate.State{gate.Open, gate.HalfOpen}, [2]gate.State{gate.HalfOpen, gate.Open})
	}
	want = append(want, [2]gate.State{gate.Open, gate.HalfOpen}, [2]gate.State{gate.HalfOpen, gate.Closed})
	assert.Equal(t, want, got)
}
