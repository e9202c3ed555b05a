package pgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// face is one way into a scope's call loop: the scope it uses and a call
// whose first upstream answer is a 503.
type face struct {
	scope string
	ep    testutil.Endpoint // "" for a Call function
	call  func(ctx context.Context, gw *pgw.GatewayClient, calls *atomic.Int32) error
}

func loopFaces(t *testing.T) map[string]face {
	img := tinyPNG(t)
	drain := func(st *pgw.Stream, err error) error {
		if err != nil {
			return err
		}
		defer st.Close()
		for {
			if _, err := st.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	return map[string]face{
		"Chat": {scope: "CHAT", ep: testutil.Chat, call: func(ctx context.Context, gw *pgw.GatewayClient, _ *atomic.Int32) error {
			_, err := gw.Chat(ctx, hello())
			return err
		}},
		"ChatStream": {scope: "CHAT", ep: testutil.Chat, call: func(ctx context.Context, gw *pgw.GatewayClient, _ *atomic.Int32) error {
			return drain(gw.ChatStream(ctx, hello()))
		}},
		"Embed": {scope: "EMBEDDING", ep: testutil.Embeddings, call: func(ctx context.Context, gw *pgw.GatewayClient, _ *atomic.Int32) error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b"}})
			return err
		}},
		"OCR": {scope: "OCR", ep: testutil.OCR, call: func(ctx context.Context, gw *pgw.GatewayClient, _ *atomic.Int32) error {
			_, err := gw.OCR(ctx, pgw.OCRRequest{Image: img})
			return err
		}},
		"Call": {scope: "RERANK", call: func(ctx context.Context, gw *pgw.GatewayClient, calls *atomic.Int32) error {
			_, err := pgw.Call(ctx, gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
				if calls.Add(1) == 1 {
					return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusServiceUnavailable, Message: "overloaded"}
				}
				return "ok", pgw.Usage{}, nil
			})
			return err
		}},
	}
}

// TestEveryLoopFollowsTheCircuitOpenMatrix: whichever face a call comes
// through, a single source whose breaker the call's own 503 opened gives
// *CircuitOpenError at once (the 503 reachable, RetryAfter the cooldown
// left) under fail_fast, and is waited out and served under wait.
func TestEveryLoopFollowsTheCircuitOpenMatrix(t *testing.T) {
	for name, f := range loopFaces(t) {
		for _, mode := range []string{"fail_fast", "wait"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				// Under fail_fast the retry finds the breaker open only if it
				// comes within the 200 ms cooldown: a retry that reached the
				// source (a machine that fell behind for the cooldown) makes
				// the trial say nothing, and it starts over.
				for try := 1; ; try++ {
					require.LessOrEqual(t, try, 3, "every fail_fast trial's retry reached the source")
					if circuitOpenTrial(t, f, mode) {
						return
					}
				}
			})
		}
	}
}

// circuitOpenTrial is one run of TestEveryLoopFollowsTheCircuitOpenMatrix
// on a gateway of its own; false: the retry came after the cooldown.
func circuitOpenTrial(t *testing.T, f face, mode string) bool {
	up := testutil.NewUpstream(t)
	if f.ep != "" {
		up.Enqueue(f.ep, testutil.Reply{Status: http.StatusServiceUnavailable})
	}
	p := f.scope + "__"
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":              f.scope,
		p + "SOURCES":             "solo",
		p + "SOLO__BASE_URL":      up.URL,
		p + "CIRCUIT_OPEN":        mode,
		p + "FAILURE_THRESHOLD":   "1",
		p + "COOLDOWN_S":          "0.2",
		p + "POLL_INTERVAL_S":     "0.01",
		p + "MAX_ATTEMPTS":        "3",
		p + "QUOTA_FULL":          "fail_fast", // a breaker wait is never a quota one
		p + "SOLO__MAX_IN_FLIGHT": "1",         // a permit kept by any path blocks the next attempt
	})
	var calls atomic.Int32
	reached := func() int {
		if f.ep == "" {
			return int(calls.Load())
		}
		return up.Requests(f.ep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := f.call(ctx, gw, &calls)
	require.NoError(t, ctx.Err())
	if mode == "fail_fast" {
		if n := reached(); n > 1 {
			t.Logf("the retry reached the source (%d attempts there): the cooldown had passed", n)
			return false
		}
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe)
		assert.Equal(t, []string{"solo"}, coe.Sources)
		assert.Greater(t, coe.RetryAfter, time.Duration(0))
		assert.LessOrEqual(t, coe.RetryAfter, 200*time.Millisecond)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the 503 that opened the breaker is reachable")
		assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
		assert.Equal(t, []string{"solo:failure"}, rec.Outcomes())
		// Once the cooldown has passed the next call is served:
		// the failed call kept neither its permit nor a lease.
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, f.call(ctx, gw, &calls))
		return true
	}
	require.NoError(t, err)
	assert.Equal(t, []string{"solo:failure", "solo:success"}, rec.Outcomes())
	assert.Equal(t, []string{"solo:closed>open", "solo:open>half_open", "solo:half_open>closed"}, rec.Transitions())
	return true
}

// TestEveryLoopEndsAtOnceWhenTheCooldownOutlastsTheDeadline: under
// CIRCUIT_OPEN=wait, whichever face a call comes through, a cooldown that
// ends past the caller's deadline ends the call at once with
// *CircuitOpenError, never with context.DeadlineExceeded after sleeping.
func TestEveryLoopEndsAtOnceWhenTheCooldownOutlastsTheDeadline(t *testing.T) {
	for name, f := range loopFaces(t) {
		t.Run(name, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			if f.ep != "" {
				up.Enqueue(f.ep, testutil.Reply{Status: http.StatusServiceUnavailable})
			}
			p := f.scope + "__"
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":            f.scope,
				p + "SOURCES":           "solo",
				p + "SOLO__BASE_URL":    up.URL,
				p + "CIRCUIT_OPEN":      "wait",
				p + "FAILURE_THRESHOLD": "1",
				p + "COOLDOWN_S":        "60",
			})
			var calls atomic.Int32
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := f.call(ctx, gw, &calls)
			require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
			var coe *pgw.CircuitOpenError
			require.ErrorAs(t, err, &coe)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.Greater(t, coe.RetryAfter, 50*time.Second)
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he, "the 503 that opened the breaker is reachable")
		})
	}
}
