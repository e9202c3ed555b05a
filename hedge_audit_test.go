package pgw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The hedging rules as a user sees them: through New with the documented
// keys, the public calls, Snapshot, Latency and the observer. The first
// chunk (or answer) of each fake upstream is released through channels;
// the hedge delays are real but short, and every assertion is about order
// and counts, never about how long something took.

// hedgeWatcher is a recorder that also keeps the hedge events, and hands
// each skipped_budget event to skipped (when set) as it happens.
type hedgeWatcher struct {
	*recorder
	mu      sync.Mutex
	hedges  []string
	skipped chan struct{}
	attempt func(pgw.AttemptRecord)
	start   func(pgw.AttemptStart)
}

func newHedgeWatcher() *hedgeWatcher { return &hedgeWatcher{recorder: newRecorder()} }

// onStart makes f hear every attempt start from now on.
func (w *hedgeWatcher) onStart(f func(pgw.AttemptStart)) {
	w.mu.Lock()
	w.start = f
	w.mu.Unlock()
}

func (w *hedgeWatcher) ObserveAttemptStart(a pgw.AttemptStart) {
	w.mu.Lock()
	f := w.start
	w.mu.Unlock()
	if f != nil {
		f(a)
	}
}

// onAttempt makes f hear every attempt record from now on, after the
// recorder kept it.
func (w *hedgeWatcher) onAttempt(f func(pgw.AttemptRecord)) {
	w.mu.Lock()
	w.attempt = f
	w.mu.Unlock()
}

func (w *hedgeWatcher) ObserveAttempt(a pgw.AttemptRecord) {
	w.recorder.ObserveAttempt(a)
	w.mu.Lock()
	f := w.attempt
	w.mu.Unlock()
	if f != nil {
		f(a)
	}
}

func (w *hedgeWatcher) ObserveHedge(e pgw.Hedge) {
	w.mu.Lock()
	w.hedges = append(w.hedges, e.Event+":"+e.Source+"<"+e.Primary)
	w.mu.Unlock()
	if e.Event == pgw.HedgeSkippedBudget && w.skipped != nil {
		w.skipped <- struct{}{}
	}
}

// Hedges lists "event:source<primary" per hedge event, in order.
func (w *hedgeWatcher) Hedges() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.hedges...)
}

func (w *hedgeWatcher) count(event string) int {
	n := 0
	for _, h := range w.Hedges() {
		if strings.HasPrefix(h, event+":") {
			n++
		}
	}
	return n
}

// hedgeBackends runs f on the memory backend and on a Redis server.
func hedgeBackends(t *testing.T, f func(t *testing.T, env map[string]string)) {
	t.Run("memory", func(t *testing.T) { f(t, map[string]string{}) })
	t.Run("redis", func(t *testing.T) {
		srv := testutil.StartRedis(t)
		f(t, map[string]string{
			"PGW_BREAKER_BACKEND": "redis",
			"PGW_REDIS_URL":       "redis://" + srv.Addr + "/0",
			"PGW_REDIS_PREFIX":    fmt.Sprintf("pgw-hedge-audit-%d", time.Now().UnixNano()),
		})
	})
}

func mergeEnv(base map[string]string, more map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	for k, v := range more {
		env[k] = v
	}
	return env
}

// openGateway builds a gateway the test closes itself (or at cleanup).
func openGateway(t *testing.T, env map[string]string, obs pgw.Observer, opts ...pgw.Option) *pgw.GatewayClient {
	t.Helper()
	s, err := config.FromMap(env)
	require.NoError(t, err)
	opts = append([]pgw.Option{pgw.WithLogger(testLogger(t)), pgw.WithObserver(obs), fastBackoff}, opts...)
	gw, err := pgw.New(context.Background(), *s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	return gw
}

// settledSnapshot reads source's breaker record once every outcome the
// gateway gave back has reached its gates: on memory at once (the gates
// are called on the attempts' goroutines), on Redis by closing gw — Close
// waits for hedge losers and flushes the outcome writer — and reading the
// record through a second gateway on the same Redis.
func settledSnapshot(t *testing.T, gw *pgw.GatewayClient, env map[string]string, scope, source string) pgw.Snapshot {
	t.Helper()
	if env["PGW_BREAKER_BACKEND"] == "redis" {
		require.NoError(t, gw.Close())
		require.Zero(t, gw.OutcomeWriterStats().Dropped)
		gw = openGateway(t, env, newRecorder())
	}
	snap, err := gw.Snapshot(context.Background(), scope, source)
	require.NoError(t, err)
	return snap
}

// sourceMode is what a fake source does with its next attempts.
type sourceMode int32

const (
	modeAnswer sourceMode = iota // answers at once
	modeFail                     // fails at once with an upstream 500
	modeHang                     // answers nothing until its ctx ends
)

// scriptedCall is a pgw.Call function whose source "slow" does what its mode
// says, and whose other sources answer at once — but, in a call whose slow
// attempt fails, only once that failure is reported: a hedge that fired
// before slow failed (a machine slower than the hedge delay) would
// otherwise answer first and cut the failure as a lost race.
type scriptedCall struct {
	mode  atomic.Int32
	slow  atomic.Int32 // attempts that reached slow
	hangs chan struct{}
	mu    sync.Mutex
	// slowStarted: this call started an attempt on slow; failed is closed
	// once this call's slow failure is reported.
	slowStarted bool
	failed      chan struct{}
}

// newScriptedCall returns a scriptedCall function that hears of slow's attempts
// through w.
func newScriptedCall(w *hedgeWatcher) *scriptedCall {
	s := &scriptedCall{hangs: make(chan struct{}, 16), failed: make(chan struct{})}
	w.onStart(func(a pgw.AttemptStart) {
		if a.Source == "slow" {
			s.mu.Lock()
			s.slowStarted = true
			s.mu.Unlock()
		}
	})
	w.onAttempt(func(a pgw.AttemptRecord) {
		if a.Source == "slow" && a.Outcome == "failure" {
			s.mu.Lock()
			select {
			case <-s.failed:
			default:
				close(s.failed)
			}
			s.mu.Unlock()
		}
	})
	return s
}

func (s *scriptedCall) set(m sourceMode) { s.mode.Store(int32(m)) }

// call runs one call of scope RERANK through fn.
func (s *scriptedCall) call(ctx context.Context, gw *pgw.GatewayClient) (string, error) {
	s.mu.Lock()
	s.slowStarted, s.failed = false, make(chan struct{})
	s.mu.Unlock()
	return pgw.Call(ctx, gw, "RERANK", s.fn)
}

func (s *scriptedCall) fn(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
	if src.Name != "slow" {
		s.mu.Lock()
		wait, failed := s.slowStarted && sourceMode(s.mode.Load()) == modeFail, s.failed
		s.mu.Unlock()
		if wait {
			select {
			case <-failed:
			case <-ctx.Done():
				return "", pgw.Usage{}, ctx.Err()
			}
		}
		return "answer from " + src.Name, pgw.Usage{}, nil
	}
	s.slow.Add(1)
	switch sourceMode(s.mode.Load()) {
	case modeFail:
		return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: 500, Message: "upstream down"}
	case modeHang:
		s.hangs <- struct{}{}
		<-ctx.Done()
		return "", pgw.Usage{}, ctx.Err()
	}
	return "answer from slow", pgw.Usage{}, nil
}

// hedgedPair is a scope of two sources, slow tried first, that hedges
// after 10 ms.
func hedgedPair(more map[string]string) map[string]string {
	return mergeEnv(map[string]string{
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "slow,fast",
		"RERANK__HEDGE_AFTER_S":  "0.01",
		"RERANK__SLOW__PRIORITY": "0",
		"RERANK__FAST__PRIORITY": "1",
	}, more)
}

// A lost race is neither a failure nor a success of its source: the
// source's run of consecutive failures is where it was before the race. A
// failure, a lost race and a failure again make a run of two — not one (the
// lost race read as a success), not three (as a failure, which at a
// threshold of 3 would open the breaker).
func TestHedgeLostRaceLeavesItsSourcesFailureRunAlone(t *testing.T) {
	hedgeBackends(t, func(t *testing.T, backend map[string]string) {
		env := hedgedPair(mergeEnv(backend, map[string]string{
			"RERANK__FAILURE_THRESHOLD":   "3",
			"RERANK__SLOW__MAX_IN_FLIGHT": "1",
		}))
		w := newHedgeWatcher()
		gw := openGateway(t, env, w)
		s := newScriptedCall(w)
		ctx := context.Background()

		s.set(modeFail)
		v, err := s.call(ctx, gw)
		require.NoError(t, err)
		require.Equal(t, "answer from fast", v, "slow failed, fast answered")

		s.set(modeHang)
		seen := len(w.Hedges()) // a slow machine may have hedged the failure too
		v, err = s.call(ctx, gw)
		require.NoError(t, err)
		require.Equal(t, "answer from fast", v, "the hedge on fast won")
		assert.Equal(t, []string{"fired:fast<slow", "won:fast<slow"}, w.Hedges()[seen:])

		// slow's only in-flight slot comes back with its give-back, after
		// its breaker heard the outcome: once slow takes an attempt again,
		// the lost race was recorded.
		s.set(modeFail)
		before := s.slow.Load()
		require.Eventually(t, func() bool {
			_, err := s.call(ctx, gw)
			require.NoError(t, err)
			return s.slow.Load() > before
		}, 10*time.Second, 5*time.Millisecond, "slow never took an attempt again")

		snap := settledSnapshot(t, gw, env, "RERANK", "slow")
		assert.Equal(t, pgw.StateClosed, snap.State)
		assert.Equal(t, 2, snap.ConsecutiveFailures, "failure, lost race, failure")
		assert.Contains(t, w.Outcomes(), "slow:hedge_lost")
	})
}

// A probe that loses its race frees its lease at once and leaves its
// source half-open: the very next call probes the source again (one probe
// at a time, and the lease's TTL is minutes), and that probe's success
// closes the breaker.
func TestHedgeLostProbeFreesItsLeaseForTheNextCall(t *testing.T) {
	hedgeBackends(t, func(t *testing.T, backend map[string]string) {
		env := hedgedPair(mergeEnv(backend, map[string]string{
			"RERANK__FAILURE_THRESHOLD": "1",
			"RERANK__COOLDOWN_S":        "0.05",
			// Wide enough that slow's quick answer below always comes
			// before the hedge could.
			"RERANK__HEDGE_AFTER_S": "0.5",
		}))
		w := newHedgeWatcher()
		gw := openGateway(t, env, w)
		s := newScriptedCall(w)
		ctx := context.Background()
		snapshot := func() pgw.Snapshot {
			snap, err := gw.Snapshot(ctx, "RERANK", "slow")
			require.NoError(t, err)
			return snap
		}

		s.set(modeFail)
		_, err := s.call(ctx, gw)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			snap := snapshot()
			return snap.State == pgw.StateOpen && snap.RetryAfter == 0
		}, 10*time.Second, 5*time.Millisecond, "slow opened and its cooldown passed")

		s.set(modeHang)
		v, err := s.call(ctx, gw)
		require.NoError(t, err)
		require.Equal(t, "answer from fast", v)
		require.Len(t, s.hangs, 1, "slow's probe ran, and lost to the hedge")
		<-s.hangs
		require.Eventually(t, func() bool { return snapshot().ProbesInFlight == 0 }, 10*time.Second, 5*time.Millisecond,
			"the lost probe's lease is freed")
		assert.Equal(t, pgw.StateHalfOpen, snapshot().State, "a lost probe is neither a success nor a failure")

		s.set(modeAnswer)
		v, err = s.call(ctx, gw)
		require.NoError(t, err)
		assert.Equal(t, "answer from slow", v, "the next call probes slow again")
		require.Eventually(t, func() bool { return snapshot().State == pgw.StateClosed }, 10*time.Second, 5*time.Millisecond)
		assert.Contains(t, w.Outcomes(), "slow:hedge_lost")
		assert.NotContains(t, w.Transitions(), "slow:half_open>open")
	})
}

// ctxItems gives no item until its ctx ends.
type ctxItems struct{ ctx context.Context }

func (s ctxItems) Recv() (string, error) { <-s.ctx.Done(); return "", s.ctx.Err() }
func (s ctxItems) Close() error          { return nil }

// A loser's token reservation is refunded to what its upstream reported
// using — nothing, when the race cut it short. slow's TPM holds one 700-token
// reservation and not two: a reservation the loser kept would keep slow out
// of the next call for half a minute.
func TestHedgeLoserRefundsItsTokenReservation(t *testing.T) {
	hedgeBackends(t, testHedgeLoserRefundsItsTokenReservation)
}

func testHedgeLoserRefundsItsTokenReservation(t *testing.T, backend map[string]string) {
	w := newHedgeWatcher()
	gw := openGateway(t, mergeEnv(backend, map[string]string{
		"PGW_SCOPES":          "GEN",
		"GEN__SOURCES":        "slow,fast",
		"GEN__HEDGE_AFTER_S":  "0.01",
		"GEN__SLOW__PRIORITY": "0",
		"GEN__FAST__PRIORITY": "1",
		"GEN__SLOW__TPM":      "1000",
		"GEN__QUOTA_FULL":     "fail_fast",
	}), w)
	var hang atomic.Bool
	hang.Store(true)
	open := func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "slow" && hang.Load() {
			return ctxItems{ctx}, nil
		}
		return pgw.FromIterator[string](&sliceIter{items: []string{src.Name + "-1", src.Name + "-2"}}), nil
	}
	est := pgw.EstimateTokens[string](700)

	st, err := pgw.CallStream(context.Background(), gw, "GEN", open, est)
	require.NoError(t, err)
	require.Equal(t, "fast", st.Source())
	got, err := collect(t, st)
	require.NoError(t, err)
	require.Equal(t, []string{"fast-1", "fast-2"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"fired:fast<slow", "won:fast<slow"}, w.Hedges())

	hang.Store(false)
	// The loser gives back on its own goroutine; until it has, the call
	// goes to fast. Once it has, slow takes the call.
	require.Eventually(t, func() bool {
		st, err := pgw.CallStream(context.Background(), gw, "GEN", open, est)
		require.NoError(t, err)
		_, err = collect(t, st)
		require.NoError(t, err)
		require.NoError(t, st.Close())
		return st.Source() == "slow"
	}, 10*time.Second, 5*time.Millisecond, "slow never had room for a second reservation: the loser kept its tokens")
	assert.Contains(t, w.Outcomes(), "slow:hedge_lost")
}

// deafChat is a chat transport whose source "slow" holds its first chunk
// until release is closed, deaf to its ctx, and records the Close of its
// stream; other sources answer at once.
type deafChat struct {
	release chan struct{}
	opened  chan string
	mu      sync.Mutex
	closed  map[string]int
}

func (d *deafChat) ChatStream(ctx context.Context, src pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	d.opened <- src.Name
	chunks := []string{"from " + src.Name + " 1", "from " + src.Name + " 2"}
	return &deafStream{d: d, name: src.Name, chunks: chunks}, nil
}

func (d *deafChat) closes(source string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed[source]
}

type deafStream struct {
	d      *deafChat
	name   string
	chunks []string
}

func (s *deafStream) Recv() (pgw.ChatChunk, error) {
	if s.name == "slow" {
		<-s.d.release
	}
	if len(s.chunks) == 0 {
		return pgw.ChatChunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return pgw.ChatChunk{Delta: c}, nil
}

func (s *deafStream) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.d.closed[s.name]++
	return nil
}

// A ChatStream whose first source holds its first chunk is hedged: the
// caller's stream is the hedge's, the call ends once, and the loser — whose
// transport ignores its ctx and produces its chunk only after the race —
// is closed unread and gives back its in-flight slot, its attempt reported
// hedge_lost. No goroutine is left behind.
func TestChatStreamHedgeLoserIsClosedUnreadAndGivenBack(t *testing.T) {
	settle := runtime.NumGoroutine()
	w := newHedgeWatcher()
	tr := &deafChat{release: make(chan struct{}), opened: make(chan string, 8), closed: map[string]int{}}
	gw := openGateway(t, map[string]string{
		"PGW_SCOPES":                "CHAT",
		"CHAT__SOURCES":             "slow,fast",
		"CHAT__HEDGE_AFTER_S":       "0.01",
		"CHAT__SLOW__PRIORITY":      "0",
		"CHAT__FAST__PRIORITY":      "1",
		"CHAT__SLOW__MAX_IN_FLIGHT": "1",
	}, w, pgw.WithChatTransport(tr))
	var once sync.Once
	s, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	require.Equal(t, "fast", s.Source())
	assert.Equal(t, "slow", <-tr.opened)
	assert.Equal(t, "fast", <-tr.opened)
	var text strings.Builder
	for {
		c, err := s.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		text.WriteString(c.Delta)
		once.Do(func() { close(tr.release) }) // the loser's chunk comes while the winner is read
	}
	require.NoError(t, s.Close())
	assert.Equal(t, "from fast 1from fast 2", text.String(), "nothing of the loser reaches the caller")

	require.Eventually(t, func() bool { return tr.closes("slow") == 1 }, 10*time.Second, time.Millisecond,
		"the loser's stream is closed")
	require.Eventually(t, func() bool { return inFlight(t, gw, "CHAT") == 0 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 1, tr.closes("fast"), "the caller's Close closes the winner's stream, once")
	assert.ElementsMatch(t, []string{"slow:hedge_lost", "fast:success"}, w.Outcomes())
	assert.Equal(t, []string{"success"}, w.Results(), "the call ends once")
	assert.Equal(t, []string{"fired:fast<slow", "won:fast<slow"}, w.Hedges())

	// slow's only slot is back: it answers a next call (on a machine
	// slower than the hedge delay a hedge may win one first).
	require.Eventually(t, func() bool {
		resp, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err)
		if resp.Source != "slow" {
			return false
		}
		assert.Equal(t, "from slow 1from slow 2", resp.Content)
		return true
	}, 10*time.Second, 5*time.Millisecond, "slow's in-flight slot never came back")

	require.NoError(t, gw.Close())
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= settle+2 }, 10*time.Second, 5*time.Millisecond,
		"goroutines: %d before, %d after", settle, runtime.NumGoroutine())
}

// HEDGE_BUDGET bounds the hedges: the bucket starts with 10, every call
// adds the share, every hedge takes one, and a call due a hedge when the
// bucket holds less than one goes on without it (skipped_budget). Every
// call here is due one: its first source answers nothing until the call
// hedged — or, when the budget said no, until the skip was reported.
func TestHedgeBudgetBoundsTheHedgesOfAScope(t *testing.T) {
	const calls, share = 26, 0.5
	w := newHedgeWatcher()
	w.skipped = make(chan struct{}, calls)
	gw := openGateway(t, hedgedPair(map[string]string{"RERANK__HEDGE_BUDGET": fmt.Sprint(share)}), w)
	fn := func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "fast" {
			return "fast", pgw.Usage{}, nil
		}
		select {
		case <-ctx.Done(): // cut by the hedge that won
			return "", pgw.Usage{}, ctx.Err()
		case <-w.skipped: // no hedge: answer
			return "slow", pgw.Usage{}, nil
		}
	}
	var want []string
	tokens := 10.0
	for i := range calls {
		tokens = min(tokens+share, 10)
		wantHedge := tokens >= 1
		if wantHedge {
			tokens--
		}
		v, err := pgw.Call(context.Background(), gw, "RERANK", fn)
		require.NoError(t, err, "call %d", i+1)
		if wantHedge {
			want = append(want, "fast")
		} else {
			want = append(want, "slow")
		}
		require.Equal(t, want[i], v, "call %d", i+1)
	}
	// Calls 1-19 spend the bucket; then every other call may hedge.
	assert.Equal(t, 22, w.count(pgw.HedgeFired))
	assert.Equal(t, 22, w.count(pgw.HedgeWon))
	assert.Equal(t, 4, w.count(pgw.HedgeSkippedBudget))
	require.Eventually(t, func() bool { return inFlight(t, gw, "RERANK") == 0 }, 10*time.Second, time.Millisecond)
}

// HEDGE_AFTER=pNN reads its delay from the source's own recent times once
// it has 20 of them; until then HEDGE_AFTER_S stands in. With a fixed delay
// of a minute, a call whose first source hangs is not hedged at 19 samples
// (its caller gives up first); at 20 quick answers the 90th percentile is a
// millisecond or so, and the same call is hedged and won by the other
// source.
func TestHedgeAdaptiveDelayTakesOverAtTwentySamples(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, hedgedPair(map[string]string{
		"RERANK__HEDGE_AFTER_S": "60",
		"RERANK__HEDGE_AFTER":   "p90",
	}), w)
	s := newScriptedCall(w)
	ctx := context.Background()
	s.set(modeAnswer)
	for range 19 {
		v, err := s.call(ctx, gw)
		require.NoError(t, err)
		require.Equal(t, "answer from slow", v)
	}
	require.Equal(t, uint64(19), observed(t, gw, "RERANK", "slow"))

	s.set(modeHang)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := s.call(short, gw)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "at 19 samples the fixed minute stands in")
	<-s.hangs
	assert.Empty(t, w.Hedges())
	require.Equal(t, uint64(19), observed(t, gw, "RERANK", "slow"), "a cancelled attempt is no sample")

	s.set(modeAnswer)
	_, err = s.call(ctx, gw)
	require.NoError(t, err)
	require.Equal(t, uint64(20), observed(t, gw, "RERANK", "slow"))

	s.set(modeHang)
	bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := s.call(bounded, gw)
	require.NoError(t, err, "at 20 samples the adaptive delay hedges long before the fixed minute")
	assert.Equal(t, "answer from fast", v)
	assert.Equal(t, []string{"fired:fast<slow", "won:fast<slow"}, w.Hedges())
}

// BALANCE=latency tries first, of two sources of one tier, the one whose
// time to answer is lower. One of the two holds every answer half a
// second: once it has answered once, every later call goes to the other —
// by weight it would take about half of them.
func TestLatencyBalancePrefersTheFasterSourceOfATier(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, map[string]string{
		"PGW_SCOPES":      "RANK",
		"RANK__SOURCES":   "a,b",
		"RANK__BALANCE":   "latency",
		"RANK__A__WEIGHT": "1",
		"RANK__B__WEIGHT": "1",
	}, w)
	var onA atomic.Int32
	fn := func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "a" {
			onA.Add(1)
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
				return "", pgw.Usage{}, ctx.Err()
			}
		}
		return src.Name, pgw.Usage{}, nil
	}
	const calls = 12
	for range calls {
		_, err := pgw.Call(context.Background(), gw, "RANK", fn)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), onA.Load(), "the slow source is tried once, to measure it")
	st, err := gw.Latency("RANK")
	require.NoError(t, err)
	require.Len(t, st, 2)
	assert.Equal(t, uint64(1), st[0].Observed)
	assert.Equal(t, uint64(calls-1), st[1].Observed)
	assert.Greater(t, st[0].EWMA, st[1].EWMA)
}

// Close ends a hedged call while both its attempts run: the call returns
// ErrClosed, both attempts are reported closed (neither lost to the
// other), the hedge canceled — not wasted — and every admission is back.
func TestCloseEndsAHedgedRaceAsClosed(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, hedgedPair(nil), w)
	running := make(chan string, 2)
	done := make(chan error, 1)
	go func() {
		_, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			running <- src.Name
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		})
		done <- err
	}()
	assert.Equal(t, "slow", <-running)
	assert.Equal(t, "fast", <-running)
	require.NoError(t, gw.Close())
	require.ErrorIs(t, <-done, pgw.ErrClosed)
	assert.ElementsMatch(t, []string{"slow:closed", "fast:closed"}, w.Outcomes())
	assert.Equal(t, []string{"fired:fast<slow", "canceled:fast<slow"}, w.Hedges())
	assert.Equal(t, []string{"closed"}, w.Results())
	assert.Zero(t, inFlight(t, gw, "RERANK"), "Close waited for every give-back")
}

// The budget holds under concurrency: thirty calls at once, each due a
// hedge, with HEDGE_BUDGET=0.1, start at most the 10 the bucket holds plus
// the 0.1 each call adds — 13 — and at least the 10; every other call is
// told skipped_budget and goes on with its first attempt.
func TestHedgeBudgetHoldsForConcurrentCalls(t *testing.T) {
	const calls = 30
	w := newHedgeWatcher()
	gw := openGateway(t, hedgedPair(map[string]string{"RERANK__HEDGE_BUDGET": "0.1"}), w)
	answer := make(chan struct{})
	fn := func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "fast" {
			return "fast", pgw.Usage{}, nil
		}
		select {
		case <-ctx.Done():
			return "", pgw.Usage{}, ctx.Err()
		case <-answer:
			return "slow", pgw.Usage{}, nil
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pgw.Call(context.Background(), gw, "RERANK", fn)
			errs <- err
		}()
	}
	// Every call decides its hedge (fired or skipped) while slow holds its
	// answer, and every hedge that fired delivers its answer; then slow
	// answers the calls that could not hedge. A fired hedge's attempt on
	// fast returns at once but runs on a goroutine of its own: released
	// before it is scheduled, slow could win that race, so the release
	// waits for the won events too (a hedge that can never win, the fault
	// this test is for, fails that wait).
	require.Eventually(t, func() bool {
		return w.count(pgw.HedgeFired)+w.count(pgw.HedgeSkippedBudget) == calls
	}, 20*time.Second, 5*time.Millisecond, "hedges: %v", w.Hedges())
	require.Eventually(t, func() bool {
		return w.count(pgw.HedgeWon) == w.count(pgw.HedgeFired)
	}, 20*time.Second, 5*time.Millisecond, "each fired hedge wins while slow holds its answer: %v", w.Hedges())
	close(answer)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	fired := w.count(pgw.HedgeFired)
	assert.GreaterOrEqual(t, fired, 10, "the full bucket's 10: %v", w.Hedges())
	assert.LessOrEqual(t, fired, 13, "at most 10 + 30 × 0.1")
	assert.Equal(t, calls-fired, w.count(pgw.HedgeSkippedBudget))
	assert.Equal(t, fired, w.count(pgw.HedgeWon), "each hedge that fired won: slow held its answer")
	require.Eventually(t, func() bool { return inFlight(t, gw, "RERANK") == 0 }, 10*time.Second, time.Millisecond)
}

// holdChat opens a stream on every source and holds its first chunk until
// the stream's ctx ends.
type holdChat struct{ opened chan string }

func (h holdChat) ChatStream(ctx context.Context, src pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	h.opened <- src.Name
	return ctxChunks{ctx}, nil
}

type ctxChunks struct{ ctx context.Context }

func (s ctxChunks) Recv() (pgw.ChatChunk, error) { <-s.ctx.Done(); return pgw.ChatChunk{}, s.ctx.Err() }
func (s ctxChunks) Close() error                 { return nil }

// A caller that gives up on a hedged ChatStream while both attempts wait
// for their first chunk gets context.Canceled; both attempts are reported
// canceled (neither lost), the hedge canceled, the call canceled once, and
// nothing is left holding an admission or a goroutine.
func TestChatStreamCanceledMidRaceGivesBackBothAttempts(t *testing.T) {
	settle := runtime.NumGoroutine()
	w := newHedgeWatcher()
	tr := holdChat{opened: make(chan string, 4)}
	gw := openGateway(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "slow,fast",
		"CHAT__HEDGE_AFTER_S":  "0.01",
		"CHAT__SLOW__PRIORITY": "0",
		"CHAT__FAST__PRIORITY": "1",
	}, w, pgw.WithChatTransport(tr))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tr.opened
		<-tr.opened
		cancel() // both attempts wait for their first chunk
	}()
	_, err := gw.ChatStream(ctx, hello())
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return inFlight(t, gw, "CHAT") == 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(w.Outcomes()) == 2 }, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"slow:canceled", "fast:canceled"}, w.Outcomes())
	assert.Equal(t, []string{"fired:fast<slow", "canceled:fast<slow"}, w.Hedges())
	assert.Equal(t, []string{"canceled"}, w.Results())
	require.NoError(t, gw.Close())
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= settle+2 }, 10*time.Second, 5*time.Millisecond,
		"goroutines: %d before, %d after", settle, runtime.NumGoroutine())
}

// A request through the governed http.Client that does not stream is hedged
// by its whole answer: the backup's answer reaches the SDK, the primary's
// request is cancelled and given back as a lost race.
func TestHTTPClientNonStreamedAnswerIsHedged(t *testing.T) {
	gw, rec, primary, backup := twoSources(t, map[string]string{"CHAT__HEDGE_AFTER_S": "0.01"})
	primary.SetDefault(testutil.Chat, testutil.Reply{Text: "from primary", FirstTokenDelay: time.Minute})
	backup.SetDefault(testutil.Chat, testutil.Reply{Text: "from backup"})
	hc := gw.HTTPClient("CHAT")
	hc.Timeout = 20 * time.Second // unhedged, the primary would hold the answer a minute
	resp := post(t, hc, "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.Contains(t, body, "from backup")
	assert.NotContains(t, body, "primary")
	assert.Equal(t, 1, primary.Requests(testutil.Chat))
	require.Eventually(t, func() bool { return inFlight(t, gw, "CHAT") == 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.Outcomes()) == 2 }, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"primary:hedge_lost", "backup:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())
}

// Each embedding sub-batch is hedged on its own: with BATCH_SIZE=1, two
// inputs whose first source holds its answers are two races, both won by
// the other source, and the answer keeps the inputs' order.
func TestEmbedSubBatchesAreEachHedged(t *testing.T) {
	slow, fast := testutil.NewUpstream(t), testutil.NewUpstream(t)
	w := newHedgeWatcher()
	gw := openGateway(t, map[string]string{
		"PGW_SCOPES":                  "EMBEDDING",
		"EMBEDDING__SOURCES":          "slow,fast",
		"EMBEDDING__SLOW__BASE_URL":   slow.URL,
		"EMBEDDING__FAST__BASE_URL":   fast.URL,
		"EMBEDDING__SLOW__PRIORITY":   "0",
		"EMBEDDING__FAST__PRIORITY":   "1",
		"EMBEDDING__SLOW__BATCH_SIZE": "1",
		"EMBEDDING__FAST__BATCH_SIZE": "1",
		"EMBEDDING__HEDGE_AFTER_S":    "0.01",
	}, w)
	slow.SetDefault(testutil.Embeddings, testutil.Reply{FirstTokenDelay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b"}})
	require.NoError(t, err)
	require.Len(t, resp.Vectors, 2)
	assert.Equal(t, 2, fast.Requests(testutil.Embeddings), "fast answered both sub-batches")
	assert.Equal(t, 2, slow.Requests(testutil.Embeddings))
	assert.Equal(t, 2, w.count(pgw.HedgeFired))
	assert.Equal(t, 2, w.count(pgw.HedgeWon))
	require.Eventually(t, func() bool { return inFlight(t, gw, "EMBEDDING") == 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(w.Outcomes()) == 4 }, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"slow:hedge_lost", "slow:hedge_lost", "fast:success", "fast:success"}, w.Outcomes())
}

// When the attempt that was hedged answers first, the hedge is wasted: the
// call gets the first source's answer, the hedge is cut and reported
// hedge_lost, and its short time is no sample of its source — it would read
// as a fast answer — while the winner's time is one of its source's.
func TestHedgeWastedOnAFasterPrimaryIsNoLatencySample(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, hedgedPair(nil), w)
	slowGo, hedgeRuns := make(chan struct{}), make(chan struct{})
	done := make(chan string, 1)
	go func() {
		v, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			if src.Name == "fast" {
				close(hedgeRuns)
				<-ctx.Done()
				return "", pgw.Usage{}, ctx.Err()
			}
			<-slowGo
			return "answer from slow", pgw.Usage{}, nil
		})
		assert.NoError(t, err)
		done <- v
	}()
	<-hedgeRuns
	close(slowGo)
	assert.Equal(t, "answer from slow", <-done)
	require.Eventually(t, func() bool { return inFlight(t, gw, "RERANK") == 0 && len(w.Outcomes()) == 2 },
		10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"slow:success", "fast:hedge_lost"}, w.Outcomes())
	assert.Equal(t, []string{"fired:fast<slow", "wasted:fast<slow"}, w.Hedges())
	st, err := gw.Latency("RERANK")
	require.NoError(t, err)
	require.Equal(t, "slow", st[0].Source)
	assert.Equal(t, uint64(1), st[0].Observed, "the winner's time is a sample")
	assert.Equal(t, uint64(0), st[1].Observed, "the wasted hedge's is not")
	assert.Zero(t, st[1].EWMA)
}

// preambleThenHold yields its preamble items at once, then holds the rest
// until its ctx ends.
type preambleThenHold struct {
	ctx      context.Context
	preamble []string
}

func (s *preambleThenHold) Recv() (string, error) {
	if len(s.preamble) > 0 {
		it := s.preamble[0]
		s.preamble = s.preamble[1:]
		return it, nil
	}
	<-s.ctx.Done()
	return "", s.ctx.Err()
}

func (s *preambleThenHold) Close() error { return nil }

// A CallStream is hedged by its FirstItem, not by any item: a first source
// that sends its preamble at once and then holds its first real item is
// hedged, and the caller gets the hedge's stream, preamble included, and
// nothing of the first source's preamble.
func TestCallStreamIsHedgedByItsFirstItemNotItsPreamble(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, map[string]string{
		"PGW_SCOPES":          "GEN",
		"GEN__SOURCES":        "slow,fast",
		"GEN__HEDGE_AFTER_S":  "0.01",
		"GEN__SLOW__PRIORITY": "0",
		"GEN__FAST__PRIORITY": "1",
	}, w)
	open := func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "slow" {
			return &preambleThenHold{ctx: ctx, preamble: []string{"", ""}}, nil
		}
		return pgw.FromIterator[string](&sliceIter{items: []string{"", "fast-1", "fast-2"}}), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := pgw.CallStream(ctx, gw, "GEN", open, pgw.FirstItem(nonEmpty))
	require.NoError(t, err)
	assert.Equal(t, "fast", st.Source())
	got, err := collect(t, st)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"", "fast-1", "fast-2"}, got, "the hedge's preamble and items, and only its own")
	assert.Equal(t, []string{"fired:fast<slow", "won:fast<slow"}, w.Hedges())
	require.Eventually(t, func() bool { return inFlight(t, gw, "GEN") == 0 && len(w.Outcomes()) == 2 },
		10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"slow:hedge_lost", "fast:success"}, w.Outcomes())
}

// HEDGE_MAX=2 lets a call start two hedges, one delay after the other, each
// on a source the call does not run yet; the first to answer wins and both
// others are lost. MAX_ATTEMPTS counts the hedges: at 2 only one starts.
func TestHedgeMaxAndMaxAttemptsBoundTheHedgesOfACall(t *testing.T) {
	for _, tc := range []struct {
		name, maxAttempts string
		hedges, outcomes  []string
		answer            string
	}{
		{"two hedges", "9",
			[]string{"fired:s2<s1", "fired:s3<s1", "won:s3<s1", "wasted:s2<s1"},
			[]string{"s1:hedge_lost", "s2:hedge_lost", "s3:success"}, "s3"},
		{"max attempts 2", "2",
			[]string{"fired:s2<s1"},
			[]string{"s1:canceled", "s2:canceled"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newHedgeWatcher()
			gw := openGateway(t, map[string]string{
				"PGW_SCOPES":       "R",
				"R__SOURCES":       "s1,s2,s3",
				"R__S1__PRIORITY":  "0",
				"R__S2__PRIORITY":  "1",
				"R__S3__PRIORITY":  "2",
				"R__HEDGE_AFTER_S": "0.01",
				"R__HEDGE_MAX":     "2",
				"R__MAX_ATTEMPTS":  tc.maxAttempts,
			}, w)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			started := make(chan string, 3)
			go func() {
				if tc.answer == "" {
					<-started
					<-started
					// Give a third attempt, were it allowed, the time of
					// many hedge delays to start before the caller gives up.
					select {
					case s := <-started:
						t.Errorf("a third attempt started on %s", s)
					case <-time.After(300 * time.Millisecond):
					}
					cancel()
				}
			}()
			v, err := pgw.Call(ctx, gw, "R", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
				started <- src.Name
				if src.Name == "s3" {
					return "s3", pgw.Usage{}, nil
				}
				<-ctx.Done()
				return "", pgw.Usage{}, ctx.Err()
			})
			if tc.answer == "" {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.answer, v)
			}
			require.Eventually(t, func() bool { return inFlight(t, gw, "R") == 0 && len(w.Outcomes()) == len(tc.outcomes) },
				10*time.Second, time.Millisecond)
			hedges := w.Hedges()
			if tc.answer == "" {
				tc.hedges = append(tc.hedges, "canceled:s2<s1")
			}
			assert.ElementsMatch(t, tc.hedges, hedges)
			assert.ElementsMatch(t, tc.outcomes, w.Outcomes())
		})
	}
}

// A hedge that is its source's probe and loses to the attempt it hedged
// frees its lease too: the source stays half-open, and the next call's
// hedge probes it again — and, answering first, closes its breaker.
func TestHedgeThatProbesAndLosesFreesItsLease(t *testing.T) {
	hedgeBackends(t, func(t *testing.T, backend map[string]string) {
		env := hedgedPair(mergeEnv(backend, map[string]string{
			"RERANK__FAILURE_THRESHOLD": "1",
			"RERANK__COOLDOWN_S":        "0.05",
		}))
		w := newHedgeWatcher()
		gw := openGateway(t, env, w)
		ctx := context.Background()
		snapshot := func() pgw.Snapshot {
			snap, err := gw.Snapshot(ctx, "RERANK", "fast")
			require.NoError(t, err)
			return snap
		}
		var fastMode atomic.Int32
		// call runs one call whose first attempt, on slow, answers once
		// the hedge on fast has run — once its failure is reported, when it
		// fails: an answer of slow that came first would cut it — or at once
		// when its ctx ends.
		call := func() string {
			hedged := make(chan struct{})
			failed := make(chan struct{}, 1)
			w.onAttempt(func(a pgw.AttemptRecord) {
				if a.Source == "fast" && a.Outcome == "failure" {
					failed <- struct{}{}
				}
			})
			v, err := pgw.Call(ctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
				if src.Name == "slow" {
					select {
					case <-hedged:
						return "answer from slow", pgw.Usage{}, nil
					case <-failed:
						return "answer from slow", pgw.Usage{}, nil
					case <-ctx.Done():
						return "", pgw.Usage{}, ctx.Err()
					}
				}
				switch sourceMode(fastMode.Load()) {
				case modeFail:
					return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: 500, Message: "upstream down"}
				case modeHang:
					close(hedged)
					<-ctx.Done()
					return "", pgw.Usage{}, ctx.Err()
				}
				return "answer from fast", pgw.Usage{}, nil
			})
			require.NoError(t, err)
			return v
		}

		fastMode.Store(int32(modeFail))
		require.Equal(t, "answer from slow", call(), "the hedge on fast failed; slow answered")
		require.Eventually(t, func() bool {
			snap := snapshot()
			return snap.State == pgw.StateOpen && snap.RetryAfter == 0
		}, 10*time.Second, 5*time.Millisecond, "fast opened and its cooldown passed")

		fastMode.Store(int32(modeHang))
		require.Equal(t, "answer from slow", call(), "slow answered before the probing hedge")
		require.Eventually(t, func() bool { return snapshot().ProbesInFlight == 0 }, 10*time.Second, 5*time.Millisecond,
			"the lost probe's lease is freed")
		assert.Equal(t, pgw.StateHalfOpen, snapshot().State, "a lost probe is neither a success nor a failure")

		fastMode.Store(int32(modeAnswer))
		require.Equal(t, "answer from fast", call(), "the next call's hedge probes fast again, and wins")
		require.Eventually(t, func() bool { return snapshot().State == pgw.StateClosed }, 10*time.Second, 5*time.Millisecond)
		assert.Equal(t, 3, w.count(pgw.HedgeFired))
		require.Eventually(t, func() bool { return len(w.Outcomes()) == 6 }, 10*time.Second, time.Millisecond)
		assert.ElementsMatch(t, []string{"slow:success", "fast:failure", "slow:success", "fast:hedge_lost", "slow:hedge_lost", "fast:success"},
			w.Outcomes())
	})
}

// A loser's request stays counted in its source's RPM: it reached the
// upstream. With RPM=2, a lost race and one answer spend slow's minute, and
// the next call goes to fast.
func TestHedgeLoserRequestStaysCountedInRPM(t *testing.T) {
	w := newHedgeWatcher()
	gw := openGateway(t, hedgedPair(map[string]string{
		"RERANK__HEDGE_AFTER_S":       "0.5", // slow's quick answers come before any hedge
		"RERANK__SLOW__RPM":           "2",
		"RERANK__SLOW__MAX_IN_FLIGHT": "1",
		"RERANK__QUOTA_FULL":          "fail_fast",
	}), w)
	s := newScriptedCall(w)
	ctx := context.Background()

	s.set(modeHang)
	v, err := s.call(ctx, gw)
	require.NoError(t, err)
	require.Equal(t, "answer from fast", v)
	<-s.hangs

	// Once slow's in-flight slot is back — the last step of its give-back
	// — slow answers a call: its second request of the minute.
	s.set(modeAnswer)
	require.Eventually(t, func() bool {
		v, err := s.call(ctx, gw)
		require.NoError(t, err)
		return v == "answer from slow"
	}, 10*time.Second, 5*time.Millisecond)

	v, err = s.call(ctx, gw)
	require.NoError(t, err)
	assert.Equal(t, "answer from fast", v, "slow's minute is spent: the lost request counted")
	assert.Equal(t, int32(2), s.slow.Load())
}
