package main

// A hedged scope (HEDGE_AFTER_S) under openai-go: through the governed
// client, a JSON answer and an event stream, and through the example's
// CallStream. The primary answers nothing until its request is cancelled;
// the hedge's backup answers, the SDK sees only the backup's answer, the
// primary's attempt is given back as hedge_lost (its request cancelled, its
// in-flight slot free for the next call).

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// hedgeSilent answers nothing (a JSON answer's headers are not sent either)
// until the request is cancelled; it closes gone then.
func hedgeSilent(gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(gone)
	}
}

func hedgeRig(t *testing.T, def http.HandlerFunc) (*govRig, chan struct{}) {
	t.Helper()
	r := newGovRig(t, def, []string{"HEDGE_AFTER_S", "0.01", "PRIMARY__MAX_IN_FLIGHT", "1"})
	gone := make(chan struct{})
	r.primary.Next(hedgeSilent(gone))
	return r, gone
}

// hedgeSettled waits for the loser's end: its request cancelled, nothing
// in flight, and checks the outcomes; then the primary, free again, takes
// the next call.
func hedgeSettled(t *testing.T, r *govRig, gone <-chan struct{}, next func() error) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the losing attempt's request was never cancelled")
	}
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
	require.NoError(t, next())
	assert.Equal(t, 2, r.primary.Count(), "the primary's in-flight slot came back")
	assert.Equal(t, 1, r.backup.Count())
}

func TestOpenAIGoHedgedJSONAnswerIsTheBackups(t *testing.T) {
	r, gone := hedgeRig(t, wire.JSON(200, completion))
	resp, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	hedgeSettled(t, r, gone, func() error { _, err := r.ask(context.Background()); return err })
}

func TestOpenAIGoHedgedStreamIsTheBackups(t *testing.T) {
	r, gone := hedgeRig(t, wire.Events(settleStream()...))
	got, err := Stream(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, gone, func() error { _, err := Stream(context.Background(), r.client, "hello"); return err })
}

// A primary that sent its role-only opening chunk has not answered yet: the
// hedge races for the first chunk that carries content.
func TestOpenAIGoHedgedStreamRacesForTheFirstContent(t *testing.T) {
	r := newGovRig(t, wire.Events(settleStream()...), []string{"HEDGE_AFTER_S", "0.01", "PRIMARY__MAX_IN_FLIGHT", "1"})
	gone := make(chan struct{})
	r.primary.Next(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(roleChunk + "\n\n"))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
		close(gone)
	})
	got, err := Stream(context.Background(), r.client, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, gone, func() error { _, err := Stream(context.Background(), r.client, "hello"); return err })
}

func TestStreamViaCallStreamIsHedged(t *testing.T) {
	r, gone := hedgeRig(t, wire.Events(settleStream()...))
	got, err := StreamViaCallStream(context.Background(), r.gw, "hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello there", got)
	hedgeSettled(t, r, gone, func() error { _, err := StreamViaCallStream(context.Background(), r.gw, "hello"); return err })
}
