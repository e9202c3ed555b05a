package main

// A hedged scope (HEDGE_AFTER_S) under openai-go: through the governed
// client, a JSON answer and an event stream, and through the example's
// CallStream. The primary answers nothing until its request is cancelled;
// the hedge's backup answers, the SDK sees only the backup's answer, the
// primary's attempt is given back as hedge_lost (its in-flight slot free
// for the next call).

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// hedgeSilent answers nothing (a JSON answer's headers are not sent either)
// until the request is cancelled.
func hedgeSilent(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// hedgeRig: the primary answers with primary until the test's first call
// is over (hedgeSettled), then with def, as the backup always does. Not a
// scripted next answer: on a loaded machine the hedge may win before the
// primary's request even reached it, and the script would be left for the
// next call.
func hedgeRig(t *testing.T, def http.HandlerFunc, primary http.HandlerFunc) *govRig {
	t.Helper()
	var primaryURL atomic.Value
	h := func(w http.ResponseWriter, req *http.Request) {
		if u, _ := primaryURL.Load().(string); u == "http://"+req.Host && hedgeSilence.Load() {
			primary(w, req)
			return
		}
		def(w, req)
	}
	hedgeSilence.Store(true)
	r := newGovRig(t, h, []string{"HEDGE_AFTER_S", "0.01", "PRIMARY__MAX_IN_FLIGHT", "1"})
	primaryURL.Store(r.primary.URL)
	return r
}

// hedgeSilence makes the primary of hedgeRig answer with its own handler.
// The tests of this file do not run in parallel.
var hedgeSilence atomic.Bool

// hedgeSettled waits for the loser's end — nothing in flight, both
// attempts reported — and checks the outcomes; then the primary, its slot
// free again, takes the next call. (On a loaded machine the hedge may start
// before the primary's request even reached it: the primary's count is
// not asserted for the first call.)
func hedgeSettled(t *testing.T, r *govRig, next func() error) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := r.gw.Latency("CHAT")
		require.NoError(t, err)
		for _, s := range st {
			if s.InFlight != 0 {
				return false
			}
		}
		return len(r.rec.Attempts()) == 2
	}, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"primary:" + pgw.OutcomeHedgeLost, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	calls := r.rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, pgw.ResultSuccess, calls[0].Result)
	hedgeSilence.Store(false)
	before := r.primary.Count()
	require.NoError(t, next())
	assert.Equal(t, before+1, r.primary.Count(), "the primary's in-flight slot came back")
	assert.Equal(t, 1, r.backup.Count())
}

func TestOpenAIGoHedgedJSONAnswerIsTheBackups(t *testing.T) {
	r := hedgeRig(t, wire.JSON(200, completion), hedgeSilent)
	resp, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	hedgeSettled(t, r, func() error { _, err := r.ask(context.Background()); return err })
}

func TestOpenAIGoHedgedStreamIsTheBackups(t *testing.T) {
	r := hedgeRig(t, wire.Events(settleStream()...), hedgeSilent)
	got, err := Stream(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, func() error { _, err := Stream(context.Background(), r.client, "hello"); return err })
}

// A primary that sent its role-only opening chunk has not answered yet: the
// hedge races for the first chunk that carries content.
func TestOpenAIGoHedgedStreamRacesForTheFirstContent(t *testing.T) {
	r := hedgeRig(t, wire.Events(settleStream()...), func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(roleChunk + "\n\n"))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	})
	got, err := Stream(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, func() error { _, err := Stream(context.Background(), r.client, "hello"); return err })
}

func TestStreamViaCallStreamIsHedged(t *testing.T) {
	r := hedgeRig(t, wire.Events(settleStream()...), hedgeSilent)
	got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, func() error { _, err := StreamViaCallStream(context.Background(), r.gw, "hello"); return err })
}
