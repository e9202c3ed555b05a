package pgw_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// burst starts calls concurrent chats on gw against the held upstream u and
// returns how many reached the upstream and how many the chat pacer refused
// (adaptive_paced), once every call is one or the other. The sent ones are
// left held; answerAll ends them.
func burst(t *testing.T, gw *pgw.GatewayClient, u *heldUpstream, calls int) (sent, paced int, errc chan error) {
	t.Helper()
	errc = make(chan error, calls)
	for range calls {
		go func() { _, err := gw.Chat(context.Background(), hello()); errc <- err }()
	}
	for sent+paced < calls {
		select {
		case <-u.arrived:
			sent++
		case err := <-errc:
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			require.Equal(t, "adaptive_paced", ase.Reasons["solo"], "refused by the pacer")
			paced++
		case <-time.After(15 * time.Second):
			t.Fatalf("%d sent, %d refused of %d", sent, paced, calls)
		}
	}
	return sent, paced, errc
}

// answerAll answers the n held requests of a burst with 200 and waits for
// their calls to succeed.
func answerAll(t *testing.T, u *heldUpstream, n int, errc chan error) {
	t.Helper()
	for range n {
		u.answer(nil)
	}
	for range n {
		require.NoError(t, <-errc)
	}
}

// The chat scope's AIMD pacer as a caller sees it: it starts at its ceiling
// (64 concurrent attempts per source); a 429 halves it, a 5xx leaves it (the
// breaker's business); a window's worth of successes then raises it by one.
func TestChatPacerHalvesOnA429NotOnA5xxAndGrowsByOneAfterAWindowOfSuccesses(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		window int
	}{{"429", http.StatusTooManyRequests, 32}, {"500", http.StatusInternalServerError, 64}} {
		t.Run(c.name, func(t *testing.T) {
			u := newHeldUpstream(t)
			gw, _ := newGateway(t, soloChat(u.URL))
			done := make(chan error, 1)
			go func() { _, err := gw.Chat(context.Background(), hello()); done <- err }()
			u.awaitArrivals(t, 1)
			u.release <- heldAnswer{status: c.status}
			u.awaitArrivals(t, 1) // the retry, after a backoff
			u.answer(nil)
			require.NoError(t, <-done)

			sent, paced, errc := burst(t, gw, u, 70)
			assert.Equal(t, c.window, sent, "attempts let through at once")
			assert.Equal(t, 70-c.window, paced)
			answerAll(t, u, sent, errc)
			if c.window == 64 {
				return // at the ceiling: nothing to grow
			}
			// 1 + 32 successes since the halving: one window's worth, +1.
			sent, paced, errc = burst(t, gw, u, 40)
			assert.Equal(t, 33, sent, "raised by one after a window of successes")
			assert.Equal(t, 7, paced)
			answerAll(t, u, sent, errc)
		})
	}
}

// The 429s of one burst are one congestion event: however many answer
// together, the window halves once, not once per 429.
func TestABurstOf429sHalvesTheChatPacerOnce(t *testing.T) {
	u := newHeldUpstream(t)
	gw, _ := newGateway(t, soloChat(u.URL))
	const n = 8
	done := make(chan error, n)
	for range n {
		go func() { _, err := gw.Chat(context.Background(), hello()); done <- err }()
	}
	u.awaitArrivals(t, n)
	for range n {
		u.release <- heldAnswer{status: http.StatusTooManyRequests}
	}
	u.awaitArrivals(t, n) // every call's retry
	for range n {
		u.answer(nil)
	}
	for range n {
		require.NoError(t, <-done)
	}
	sent, paced, errc := burst(t, gw, u, 40)
	assert.Equal(t, 32, sent, "8 throttles within the hold: one halving, 64 → 32")
	assert.Equal(t, 8, paced)
	answerAll(t, u, sent, errc)
}
