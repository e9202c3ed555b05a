package pgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// heldUpstream is an OpenAI-compatible chat upstream that holds every
// request until the test releases it with the headers (and status) to
// answer with; a request whose client goes away first gets no answer.
type heldUpstream struct {
	URL     string
	arrived chan struct{}
	release chan heldAnswer
	hits    atomic.Int64
}

// heldAnswer is one release: a status (200 when 0) and the headers.
type heldAnswer struct {
	status int
	hdr    http.Header
}

const heldChatJSON = `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{arrived: make(chan struct{}, 256), release: make(chan heldAnswer, 256)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.hits.Add(1)
		u.arrived <- struct{}{}
		var a heldAnswer
		select {
		case a = <-u.release:
		case <-r.Context().Done():
			return
		}
		for k, vs := range a.hdr {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		if a.status != 0 && a.status != http.StatusOK {
			w.WriteHeader(a.status)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		_, _ = io.WriteString(w, heldChatJSON)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/v1"
	return u
}

// answer releases one held request with a 200 and hdr.
func (u *heldUpstream) answer(hdr http.Header) { u.release <- heldAnswer{hdr: hdr} }

// awaitArrivals waits for n more requests to arrive.
func (u *heldUpstream) awaitArrivals(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-u.arrived:
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of %d requests arrived", i, n)
		}
	}
}

// requestsLeft is an OpenAI answer's requests window.
func requestsLeft(limit, remaining, reset string) http.Header {
	return headers("x-ratelimit-limit-requests", limit, "x-ratelimit-remaining-requests", remaining,
		"x-ratelimit-reset-requests", reset)()
}

// The first answer of a source is taken less the other calls admitted
// before anything was known: four calls in flight, the first answer says 5
// left, so 5 − 3 = 2 more calls are admitted (the later answers, saying 5
// too, never raise the budget) and the next is refused with the reset. The
// same in memory and for two gateways sharing Redis, whose blind calls
// count together.
func TestTheFirstAnswerIsTakenLessTheCallsAlreadyInFlight(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			u := newHeldUpstream(t)
			env := soloChat(u.URL, "CHAT__SOLO__MAX_IN_FLIGHT", "10")
			gws := make([]*pgw.GatewayClient, 1, 2)
			if backend == "redis" {
				env = onRedis(t, testutil.StartRedis(t), env)
				gws = gws[:2]
			}
			for i := range gws {
				gws[i], _ = newGateway(t, env)
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = gws[i%len(gws)].Chat(context.Background(), hello()) }()
			}
			u.awaitArrivals(t, 4)
			for range 4 {
				u.answer(requestsLeft("60", "5", "30s"))
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "blind call %d", i)
			}
			for i := range 2 {
				u.answer(requestsLeft("60", "5", "30s"))
				_, err := gws[i%len(gws)].Chat(context.Background(), hello())
				require.NoError(t, err, "call %d of the 2 left", i)
			}
			u.answer(requestsLeft("60", "5", "30s")) // so that a wrong admission ends at once
			for i, gw := range gws {
				_, err := gw.Chat(context.Background(), hello())
				var ase *pgw.AllSourcesExhausted
				require.ErrorAs(t, err, &ase, "gateway %d", i+1)
				assert.Equal(t, "rate_limited", ase.Reasons["solo"])
				assert.InDelta(t, 30, ase.RetryAfter.Seconds(), 2)
			}
			assert.Equal(t, int64(6), u.hits.Load())
		})
	}
}

// An answer that arrives after a 429 — a success of a request sent before
// it, advertising room and an earlier reset — shortens neither the 429's
// Retry-After hold-off nor the spent window it advertised.
func TestALateSuccessNeverShortensAHoldOffInForce(t *testing.T) {
	u := newHeldUpstream(t)
	gw, rec := newGateway(t, soloChat(u.URL, "CHAT__SOLO__MAX_IN_FLIGHT", "10"))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = gw.Chat(context.Background(), hello()) }()
	}
	u.awaitArrivals(t, 2)
	h := requestsLeft("60", "0", "60s")
	h.Set("Retry-After", "60")
	u.release <- heldAnswer{status: http.StatusTooManyRequests, hdr: h}
	require.Eventually(t, func() bool {
		for _, o := range rec.Outcomes() {
			if o == "solo:throttle" {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "the 429 was heard first")
	u.answer(requestsLeft("60", "50", "5s"))
	wg.Wait()

	u.answer(nil) // so that a wrong admission ends at once
	_, err := gw.Chat(context.Background(), hello())
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2, "the 429's minute still holds")
	assert.Equal(t, int64(2), u.hits.Load())
	snap, err := gw.Snapshot(context.Background(), "CHAT", "solo")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised)
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining, "the smaller figure is kept")
	assert.InDelta(t, 60, snap.Advertised.Requests.Reset.Seconds(), 2, "and the later reset")
}

// A window spent by calls that never brought an answer back (they timed
// out) does not hold the source off for good: its figures are forgotten a
// window and a second later, and a waiting call then runs. The same in
// memory and in Redis.
func TestAWindowSpentByUnansweredCallsIsForgotten(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			u := newHeldUpstream(t)
			env := soloChat(u.URL, "CHAT__QUOTA_FULL", "wait",
				"CHAT__SOLO__TIMEOUT_S", "0.3", "CHAT__FAILURE_THRESHOLD", "20", "CHAT__MAX_ATTEMPTS", "20")
			if backend == "redis" {
				env = onRedis(t, testutil.StartRedis(t), env)
			}
			gw, rec := newGateway(t, env)
			u.answer(requestsLeft("2", "0", "1s"))
			_, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)
			u.awaitArrivals(t, 1)

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := gw.Chat(ctx, hello()); done <- err }()
			u.awaitArrivals(t, 2) // the reset's 2 requests: both time out unanswered
			u.awaitArrivals(t, 1) // the figures forgotten, the source is asked again
			u.answer(nil)
			require.NoError(t, <-done)
			assert.Equal(t, []string{"solo:success", "solo:failure", "solo:failure", "solo:success"}, rec.Outcomes())
			assert.Equal(t, int64(4), u.hits.Load())
		})
	}
}

// Through the gateway, an answer with less than a tenth of a window left
// halves the chat pacer's window before any 429: of 40 concurrent calls
// 32 are sent and 8 refused as adaptive_paced, where with half the window
// left all 40 are sent.
func TestLittleAdvertisedHeadroomHalvesTheChatPacer(t *testing.T) {
	for _, c := range []struct {
		left        string
		sent, paced int
	}{{"5000000", 40, 0}, {"900000", 32, 8}} {
		t.Run(c.left, func(t *testing.T) {
			u := newHeldUpstream(t)
			gw, _ := newGateway(t, soloChat(u.URL, "CHAT__SOLO__MAX_IN_FLIGHT", "100"))
			// The tokens window: plenty of budget, only the headroom is low.
			h := headers("x-ratelimit-limit-tokens", "10000000", "x-ratelimit-remaining-tokens", c.left,
				"x-ratelimit-reset-tokens", "30s")()
			u.answer(h)
			_, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)
			u.awaitArrivals(t, 1)

			const calls = 40
			errc := make(chan error, calls)
			for range calls {
				go func() { _, err := gw.Chat(context.Background(), hello()); errc <- err }()
			}
			var paced int
			sent := 0
			for sent+paced < calls {
				select {
				case <-u.arrived:
					sent++
				case err := <-errc:
					var ase *pgw.AllSourcesExhausted
					require.ErrorAs(t, err, &ase)
					assert.Equal(t, "adaptive_paced", ase.Reasons["solo"])
					paced++
				case <-time.After(15 * time.Second):
					t.Fatalf("%d sent, %d refused of %d", sent, paced, calls)
				}
			}
			assert.Equal(t, c.sent, sent)
			assert.Equal(t, c.paced, paced)
			for range sent {
				u.answer(h)
			}
			for range sent {
				require.NoError(t, <-errc)
			}
		})
	}
}

// A hedge's loser whose answer had begun — its headers said the window is
// spent — still refreshes its source's budget: the next call does not ask
// it.
func TestAHedgeLosersHeadersRefreshItsBudget(t *testing.T) {
	var slowHits atomic.Int64
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		slowHits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for k, vs := range spentOpenAI("50s")() {
			w.Header()[k] = vs
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select { // the content never comes
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(stop) })
	fast := testutil.NewUpstream(t)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "slow,fast",
		"CHAT__HEDGE_AFTER_S":   "0.05",
		"CHAT__SLOW__BASE_URL":  slow.URL + "/v1",
		"CHAT__SLOW__PRIORITY":  "0",
		"CHAT__SLOW__MODEL":     "m",
		"CHAT__FAST__BASE_URL":  fast.URL,
		"CHAT__FAST__PRIORITY":  "1",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	r, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "fast", r.Source)
	require.Eventually(t, func() bool { return len(rec.Outcomes()) == 2 }, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"fast:success", "slow:hedge_lost"}, rec.Outcomes())

	snap, err := gw.Snapshot(context.Background(), "CHAT", "slow")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised, "the loser's headers were read")
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)

	r, err = gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "fast", r.Source)
	assert.Equal(t, int64(1), slowHits.Load(), "the spent source was not asked again")
}
