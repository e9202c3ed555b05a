package pgw_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// The observers below are what a user writes: the two core methods and one
// optional interface each, nothing of pgw's embedded. Each counts the events
// it is handed by name.

type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(name string) {
	t.mu.Lock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[name]++
	t.mu.Unlock()
}

func (t *tally) names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k := range t.n {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (t *tally) count(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[name]
}

type coreObs struct{ t *tally }

func (o coreObs) ObserveAttempt(pgw.AttemptRecord)   { o.t.add("attempt") }
func (o coreObs) ObserveStateChange(pgw.StateChange) { o.t.add("state_change") }

type startObs struct{ coreObs }

func (o startObs) ObserveAttemptStart(pgw.AttemptStart) { o.t.add("attempt_start") }

type rejectionObs struct{ coreObs }

func (o rejectionObs) ObserveRejection(pgw.Rejection) { o.t.add("rejection") }

type waitObs struct{ coreObs }

func (o waitObs) ObserveWaitStart(pgw.WaitStart) { o.t.add("wait_start") }
func (o waitObs) ObserveWaitEnd(pgw.WaitEnd)     { o.t.add("wait_end") }

type callObs struct{ coreObs }

func (o callObs) ObserveCall(pgw.CallResult) { o.t.add("call") }

type hedgeObs struct{ coreObs }

func (o hedgeObs) ObserveHedge(pgw.Hedge) { o.t.add("hedge") }

type advertisedObs struct{ coreObs }

func (o advertisedObs) ObserveAdvertised(pgw.Advertised) { o.t.add("advertised") }

type ctxObs struct{ coreObs }

func (o ctxObs) StartCall(ctx context.Context, _ pgw.CallStart) context.Context {
	o.t.add("start_call")
	return ctx
}
func (o ctxObs) StartAttempt(ctx context.Context, _ pgw.AttemptStart) context.Context {
	o.t.add("start_attempt")
	return ctx
}
func (o ctxObs) EndAttempt(context.Context, pgw.AttemptRecord) { o.t.add("end_attempt") }
func (o ctxObs) EndWait(context.Context, pgw.WaitEnd)          { o.t.add("end_wait") }
func (o ctxObs) EndCall(context.Context, pgw.CallResult)       { o.t.add("end_call") }

type hedgeCtxObs struct{ ctxObs }

func (o hedgeCtxObs) ObserveHedgeContext(context.Context, pgw.Hedge) { o.t.add("hedge_context") }

// offObs implements every interface and says it is off.
type offObs struct {
	startObs
	rejectionObs
	waitObs
	callObs
	hedgeObs
	advertisedObs
	hedgeCtxObs
	coreObs
	asked *atomic.Int64
}

func (o offObs) Enabled() bool { o.asked.Add(1); return false }

func newOff(t *tally) offObs {
	c := coreObs{t}
	return offObs{startObs{c}, rejectionObs{c}, waitObs{c}, callObs{c}, hedgeObs{c}, advertisedObs{c}, hedgeCtxObs{ctxObs{c}}, c, &atomic.Int64{}}
}

// waitLine is the Info line the gateway writes when a call begins a wait.
const waitLine = "pgw: no source may run; waiting"

// waitSeen passes every record on to next, and notes whether the gateway
// began a wait: Info is enabled for that line whatever next takes.
type waitSeen struct {
	next slog.Handler
	seen *atomic.Bool
}

func (h waitSeen) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h waitSeen) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == waitLine {
		h.seen.Store(true)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h waitSeen) WithAttrs(as []slog.Attr) slog.Handler {
	return waitSeen{h.next.WithAttrs(as), h.seen}
}

func (h waitSeen) WithGroup(name string) slog.Handler {
	return waitSeen{h.next.WithGroup(name), h.seen}
}

// untilWaited runs call on a single source under CIRCUIT_OPEN=wait whose
// first attempt's 503 opens the breaker (singleSource), until call reports
// that the call waited; it returns how many times it ran call. The call
// waits only if its retry finds the breaker still open. The cooldown is
// real time, and a loaded machine can hold the retry past it: the retry
// is then admitted as the probe at once, with no wait. So each run that
// did not wait is followed by one on a new env with twice the cooldown,
// from first to at most 16 × first.
func untilWaited(t *testing.T, first time.Duration, call func(env map[string]string) (waited bool)) int {
	t.Helper()
	for runs, cooldown := 1, first; ; runs, cooldown = runs+1, 2*cooldown {
		require.LessOrEqual(t, cooldown, 16*first, "the single-source call never waited for its cooldown")
		env, _ := singleSource(t, "wait", strconv.FormatFloat(cooldown.Seconds(), 'f', -1, 64))
		if call(env) {
			return runs
		}
	}
}

// observerScenarios runs, each on a gateway of its own built with obs, the
// calls that make every kind of event: a single-source call that fails,
// waits out the cooldown and succeeds (attempt starts and records, state
// changes, a rejection, a wait, the call's result, its contexts); a call
// hedged away from a slow source; a chat stream read to its end and a
// streamed request through HTTPClient; an embedding whose answer
// advertises its rate limits. It returns how many governed calls it made:
// five, and one more for each time the first call had to be run again.
func observerScenarios(t *testing.T, log *slog.Logger, obs func() (pgw.Observer, func())) int {
	t.Helper()
	build := func(env map[string]string, opts ...pgw.Option) *pgw.GatewayClient {
		s, err := config.FromMap(env)
		require.NoError(t, err)
		o, done := obs()
		gw, err := pgw.New(context.Background(), *s, append([]pgw.Option{pgw.WithObserver(o), pgw.WithLogger(log), fastBackoff}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(done)
		t.Cleanup(func() { require.NoError(t, gw.Close()) })
		return gw
	}
	ctx := context.Background()

	// The first call may have to run again until it has waited
	// (untilWaited); the gateway's Info line that opens a wait tells, not
	// the observer under test.
	made := untilWaited(t, 50*time.Millisecond, func(env map[string]string) bool {
		waited := &atomic.Bool{}
		_, err := build(env, pgw.WithLogger(slog.New(waitSeen{log.Handler(), waited}))).Chat(ctx, hello())
		require.NoError(t, err)
		return waited.Load()
	})

	gw := build(map[string]string{
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "slow,fast",
		"RERANK__HEDGE_AFTER_S":  "0.01",
		"RERANK__FAST__PRIORITY": "1",
	})
	_, err := pgw.Call(ctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		}
		return "ok", pgw.Usage{}, nil
	})
	require.NoError(t, err)

	up := testutil.NewUpstream(t)
	gw = build(map[string]string{"CHAT__SOURCES": "up", "CHAT__UP__BASE_URL": up.URL})
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	for {
		if _, err := st.Recv(); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	require.NoError(t, st.Close())
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true)))

	var left, calls atomic.Int64
	left.Store(50)
	gw = build(map[string]string{
		"EMBEDDING__SOURCES":      "up",
		"EMBEDDING__UP__BASE_URL": advertisingUpstream(t, &left, &calls),
		"EMBEDDING__UP__MODEL":    "m",
	})
	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	return made + 4
}

// Every optional observer interface, implemented alone by a user's type and
// handed to WithObserver directly, inside observe.Multi (alone, beside
// another observer, beside one that is off) and inside observe.Async,
// receives every event its godoc promises. Async delivers no ctx-following methods, as its godoc
// says.
func TestEachObserverInterfaceAloneGetsItsEventsDirectlyInMultiAndInAsync(t *testing.T) {
	type impl struct {
		name  string
		make  func(*tally) pgw.Observer
		want  []string // event names a synchronous route delivers
		async []string // those Async delivers
	}
	core := []string{"attempt", "state_change"}
	plus := func(names ...string) []string {
		out := append(append([]string(nil), core...), names...)
		sort.Strings(out)
		return out
	}
	ctxEvents := []string{"start_call", "start_attempt", "end_attempt", "end_wait", "end_call"}
	impls := []impl{
		{"Observer", func(t *tally) pgw.Observer { return coreObs{t} }, plus(), plus()},
		{"AttemptStartObserver", func(t *tally) pgw.Observer { return startObs{coreObs{t}} }, plus("attempt_start"), plus("attempt_start")},
		{"RejectionObserver", func(t *tally) pgw.Observer { return rejectionObs{coreObs{t}} }, plus("rejection"), plus("rejection")},
		{"WaitObserver", func(t *tally) pgw.Observer { return waitObs{coreObs{t}} }, plus("wait_start", "wait_end"), plus("wait_start", "wait_end")},
		{"CallObserver", func(t *tally) pgw.Observer { return callObs{coreObs{t}} }, plus("call"), plus("call")},
		{"HedgeObserver", func(t *tally) pgw.Observer { return hedgeObs{coreObs{t}} }, plus("hedge"), plus("hedge")},
		{"AdvertisedObserver", func(t *tally) pgw.Observer { return advertisedObs{coreObs{t}} }, plus("advertised"), plus("advertised")},
		{"ContextObserver", func(t *tally) pgw.Observer { return ctxObs{coreObs{t}} }, plus(ctxEvents...), plus()},
		{"HedgeContextObserver", func(t *tally) pgw.Observer { return hedgeCtxObs{ctxObs{coreObs{t}}} },
			plus(append([]string{"hedge_context"}, ctxEvents...)...), plus()},
	}
	routes := []struct {
		name  string
		async bool
		wrap  func(pgw.Observer) (pgw.Observer, func())
	}{
		{"direct", false, func(o pgw.Observer) (pgw.Observer, func()) { return o, func() {} }},
		{"Multi", false, func(o pgw.Observer) (pgw.Observer, func()) { return observe.Multi(o), func() {} }},
		{"Multi beside another", false, func(o pgw.Observer) (pgw.Observer, func()) {
			return observe.Multi(coreObs{&tally{}}, o), func() {}
		}},
		{"Multi beside one that is off", false, func(o pgw.Observer) (pgw.Observer, func()) {
			return observe.Multi(newOff(&tally{}), o), func() {}
		}},
		{"Async", true, func(o pgw.Observer) (pgw.Observer, func()) {
			a := observe.Async(o, 0)
			return a, a.Close
		}},
		{"Multi of Async", true, func(o pgw.Observer) (pgw.Observer, func()) {
			a := observe.Async(o, 0)
			return observe.Multi(a), a.Close
		}},
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, im := range impls {
		for _, r := range routes {
			t.Run(im.name+"/"+r.name, func(t *testing.T) {
				tl := &tally{}
				calls := 0
				t.Run("calls", func(t *testing.T) {
					calls = observerScenarios(t, quiet, func() (pgw.Observer, func()) { return r.wrap(im.make(tl)) })
				})
				want := im.want
				if r.async {
					want = im.async
				}
				assert.Equal(t, want, tl.names())
				for _, name := range []string{"call", "start_call", "end_call"} {
					if slices.Contains(want, name) {
						assert.Equal(t, calls, tl.count(name), "%s: one per call", name)
					}
				}
				if !r.async {
					// The ctx-following methods pair up.
					assert.Equal(t, tl.count("start_call"), tl.count("end_call"))
					assert.Equal(t, tl.count("start_attempt"), tl.count("end_attempt"))
				}
			})
		}
	}
}

// An observer that says it is off gets no event of any call, whatever it
// implements and however it is handed over — directly, inside Multi beside
// an observer that is on, inside Async — and whatever the gateway's logger
// takes (the Debug attempt log is an observer of the gateway's own).
func TestAnObserverThatIsOffGetsNoEventOfAnyCallWhateverItIsWrappedIn(t *testing.T) {
	for _, lv := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		log := slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: lv}))
		routes := []struct {
			name string
			wrap func(pgw.Observer) (pgw.Observer, func())
		}{
			{"direct", func(o pgw.Observer) (pgw.Observer, func()) { return o, func() {} }},
			{"Multi", func(o pgw.Observer) (pgw.Observer, func()) { return observe.Multi(o), func() {} }},
			{"Multi beside one that is on", func(o pgw.Observer) (pgw.Observer, func()) {
				return observe.Multi(o, callObs{coreObs{&tally{}}}), func() {}
			}},
			{"Async", func(o pgw.Observer) (pgw.Observer, func()) {
				a := observe.Async(o, 0)
				return a, a.Close
			}},
			{"Multi nested beside one that is on", func(o pgw.Observer) (pgw.Observer, func()) {
				return observe.Multi(callObs{coreObs{&tally{}}}, observe.Multi(o, coreObs{&tally{}})), func() {}
			}},
			{"Async inside Multi beside one that is on", func(o pgw.Observer) (pgw.Observer, func()) {
				a := observe.Async(o, 0)
				return observe.Multi(a, callObs{coreObs{&tally{}}}), a.Close
			}},
		}
		for _, r := range routes {
			t.Run(lv.String()+"/"+r.name, func(t *testing.T) {
				tl := &tally{}
				off := newOff(tl)
				t.Run("calls", func(t *testing.T) {
					observerScenarios(t, log, func() (pgw.Observer, func()) { return r.wrap(off) })
				})
				assert.Positive(t, off.asked.Load(), "Enabled was asked")
				// A state change is news of the source, not of a call: an
				// observer gets every one, so that each From is the previous
				// To.
				got := tl.names()
				for i := 0; i < len(got); i++ {
					if got[i] == "state_change" || got[i] == "advertised" {
						got = append(got[:i], got[i+1:]...)
						i--
					}
				}
				assert.Empty(t, got, "events of calls handed to an observer that is off")
			})
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
