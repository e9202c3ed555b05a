package pgw_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
)

// hedgePanicker counts the attempts that start and end and the calls that
// end, and panics on the first hedge event named panicOn, as a buggy
// observer would.
type hedgePanicker struct {
	observe.Nop
	panicOn string

	mu       sync.Mutex
	panicked bool
	starts   map[string]int // by source
	ends     map[string]int
	outcomes map[string]string
	calls    []string
}

func newHedgePanicker(on string) *hedgePanicker {
	return &hedgePanicker{panicOn: on, starts: map[string]int{}, ends: map[string]int{}, outcomes: map[string]string{}}
}

func (o *hedgePanicker) ObserveAttemptStart(e pgw.AttemptStart) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts[e.Source]++
}

func (o *hedgePanicker) ObserveAttempt(a pgw.AttemptRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends[a.Source]++
	o.outcomes[a.Source] = a.Outcome
}

func (o *hedgePanicker) ObserveCall(c pgw.CallResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, c.Result)
}

func (o *hedgePanicker) ObserveHedge(e pgw.Hedge) {
	o.mu.Lock()
	fire := e.Event == o.panicOn && !o.panicked
	o.panicked = o.panicked || fire
	o.mu.Unlock()
	if fire {
		panic("observer bug")
	}
}

// An observer that panics on a hedge event of a real hedged race — the
// hedge fired, won, or wasted on the primary's answer or on the hedge's
// caller error — leaves no attempt without its end and no call without its
// result: every attempt start is matched by a record, the call reports its
// end, no admission is left held, and the Prometheus in-flight gauge is back
// to 0. The panic goes on to the caller, as an observer's panic does.
func TestAnObserverPanickingOnAHedgeEventEndsEveryAttempt(t *testing.T) {
	type fn = func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error)
	// hedgeLoses: the hedge ("fast") runs until the primary ("slow")
	// answers, which it does once the hedge runs.
	hedgeLoses := func() fn {
		running := make(chan struct{})
		return func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			if src.Name == "fast" {
				close(running)
				<-ctx.Done()
				return "", pgw.Usage{}, ctx.Err()
			}
			<-running
			return "slow", pgw.Usage{}, nil
		}
	}
	// hedgeAnswers: the primary waits for its ctx; the hedge answers with
	// v, or err.
	hedgeAnswers := func(err error) fn {
		return func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
			if src.Name == "slow" {
				<-ctx.Done()
				return "", pgw.Usage{}, ctx.Err()
			}
			return "fast", pgw.Usage{}, err
		}
	}
	for _, c := range []struct {
		name, on string
		chat     string // "complete", "stream"; empty: pgw.Call
		fn       fn
	}{
		{"fired", pgw.HedgeFired, "", hedgeAnswers(nil)},
		{"won", pgw.HedgeWon, "", hedgeAnswers(nil)},
		{"won_chat", pgw.HedgeWon, "complete", nil},
		{"won_stream", pgw.HedgeWon, "stream", nil},
		{"wasted", pgw.HedgeWasted, "", hedgeLoses()},
		{"wasted_caller_error", pgw.HedgeWasted, "", hedgeAnswers(&pgw.HTTPError{StatusCode: 400})},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := prom.New()
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(col))
			obs := newHedgePanicker(c.on)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "CHAT,HEDGED",
				"CHAT__SOURCES":          "slow,fast",
				"CHAT__HEDGE_AFTER_S":    "0.01",
				"CHAT__BALANCE":          "weighted",
				"CHAT__FAST__PRIORITY":   "1",
				"HEDGED__SOURCES":        "slow,fast",
				"HEDGED__HEDGE_AFTER_S":  "0.01",
				"HEDGED__FAST__PRIORITY": "1",
			}, pgw.WithChatTransport(slowFirst{}), pgw.WithObserver(observe.Multi(col, obs)))
			got := func() (p any) {
				defer func() { p = recover() }()
				switch c.chat {
				case "complete":
					_, _ = gw.Chat(context.Background(), hello())
				case "stream":
					if st, err := gw.ChatStream(context.Background(), hello()); err == nil {
						_ = st.Close()
					}
				default:
					_, _ = pgw.Call(context.Background(), gw, "HEDGED", c.fn)
				}
				return nil
			}()
			assert.Equal(t, "observer bug", got, "the observer's panic reaches the caller")
			require.NoError(t, gw.Close()) // waits for every hedge leg's give-back
			scope := "HEDGED"
			if c.chat != "" {
				scope = "CHAT"
			}
			assertNoAdmissionHeld(t, gw, scope, "slow", "fast")

			obs.mu.Lock()
			defer obs.mu.Unlock()
			assert.True(t, obs.panicked)
			assert.Equal(t, obs.starts, obs.ends, "every attempt that started ended (outcomes %v)", obs.outcomes)
			assert.Len(t, obs.calls, 1, "the call reports its end")
			seen := requireNoneInFlight(t, reg)
			assert.Positive(t, seen)
		})
	}
}

// assertNoAdmissionHeld asserts that no attempt on scope's sources is left
// holding its admission.
func assertNoAdmissionHeld(t *testing.T, gw *pgw.GatewayClient, scope string, sources ...string) {
	t.Helper()
	adm, err := gw.Admission(scope)
	require.NoError(t, err)
	for _, s := range sources {
		assert.Zero(t, adm.Latency().InFlight(s), "no attempt of %s is left holding its admission", s)
	}
}
