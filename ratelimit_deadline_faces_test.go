package pgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/transport"
)

// sliceItems is a Streamer over a fixed list of items.
type sliceItems struct {
	items []string
	next  int
}

func (s *sliceItems) Recv() (string, error) {
	if s.next >= len(s.items) {
		return "", io.EOF
	}
	s.next++
	return s.items[s.next-1], nil
}

func (s *sliceItems) Close() error { return nil }

// drainStream reads st to its end and closes it; io.EOF is no error.
func drainStream(st *pgw.Stream) error {
	var err error
	for err == nil {
		_, err = st.Recv()
	}
	if cerr := st.Close(); cerr != nil {
		return cerr
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// The deadline rule holds on every face, not only Chat: once a source's
// advertised window is spent with its reset a minute ahead, a
// QUOTA_FULL=wait call with a 5 s deadline ends at once with the quota
// error and the reset as its RetryAfter (inside a *BatchError for the
// batched faces), and the upstream is not asked.
func TestAdvertisedResetPastTheDeadlineEndsEveryFaceAtOnce(t *testing.T) {
	for _, c := range []struct {
		face, scope string
		call        func(ctx context.Context, t *testing.T, gw *pgw.GatewayClient) error
	}{
		{"ChatStream", "CHAT", func(ctx context.Context, _ *testing.T, gw *pgw.GatewayClient) error {
			st, err := gw.ChatStream(ctx, hello())
			if err != nil {
				return err
			}
			return drainStream(st)
		}},
		{"Embed in sub-batches", "EMBEDDING", func(ctx context.Context, _ *testing.T, gw *pgw.GatewayClient) error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b", "c", "d", "e"}})
			return err
		}},
		{"OCR", "OCR", func(ctx context.Context, t *testing.T, gw *pgw.GatewayClient) error {
			_, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
			return err
		}},
		{"OCRPages", "OCR", func(ctx context.Context, t *testing.T, gw *pgw.GatewayClient) error {
			_, err := gw.OCRPages(ctx, []pgw.OCRRequest{{Image: tinyPNG(t)}, {Image: tinyPNG(t)}})
			return err
		}},
	} {
		t.Run(c.face, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			adv := newAdvertiser(t, up, spentOpenAI("1m0s"))
			sc := c.scope
			env := map[string]string{
				"PGW_SCOPES":                 sc,
				sc + "__SOURCES":             "solo",
				sc + "__SOLO__BASE_URL":      adv.URL,
				sc + "__SOLO__MODEL":         "m",
				sc + "__SOLO__MAX_IN_FLIGHT": "8",
				sc + "__QUOTA_FULL":          "wait",
				sc + "__POLL_INTERVAL_S":     "0.01",
			}
			if sc == "EMBEDDING" {
				env["EMBEDDING__SOLO__BATCH_SIZE"] = "2"
			}
			gw, _ := newGateway(t, env)
			require.NoError(t, c.call(context.Background(), t, gw), "the first call learns the budget")
			before := adv.hits.Load()

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := c.call(ctx, t, gw)
			require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
			require.Error(t, err)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
			assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2)
			assert.Equal(t, before, adv.hits.Load(), "nothing was sent")
		})
	}
}

// The governed HTTPClient's streamed requests obey the deadline rule too:
// pgw's 424 at once, with the wait in Retry-After and retry-after-ms.
func TestHTTPClientStreamWaitPastTheDeadlineIsAVerdictAtOnce(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("1m0s"))
	gw, _ := newGateway(t, soloChat(adv.URL, "CHAT__QUOTA_FULL", "wait"))
	hc := gw.HTTPClient("CHAT")
	readBody(t, post(t, hc, "chat/completions", chatBody(true)))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(true)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body := readBody(t, resp)
	require.NoError(t, ctx.Err())
	assert.Equal(t, http.StatusFailedDependency, resp.StatusCode, body)
	assert.Equal(t, "60", resp.Header.Get("Retry-After"))
	ms, err := strconv.ParseInt(resp.Header.Get("retry-after-ms"), 10, 64)
	require.NoError(t, err)
	assert.InDelta(t, 60000, ms, 2000)
	assert.Contains(t, body, "PGW-EXHAUSTED")
	assert.Equal(t, int64(1), adv.hits.Load())
}

// pgw.Call learns the advertised budget from what its attempt function
// reports with transport.ObserveResponse: once a reported answer says the
// window is spent, the next Call is refused without running the function.
func TestCallReportedAnswersFeedTheAdvertisedBudget(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "RERANK",
		"RERANK__SOURCES":         "r",
		"RERANK__R__BASE_URL":     "http://127.0.0.1:1/v1",
		"RERANK__QUOTA_FULL":      "fail_fast",
		"RERANK__POLL_INTERVAL_S": "0.01",
	})
	runs := 0
	fn := func(ctx context.Context, _ pgw.Source) (string, pgw.Usage, error) {
		runs++
		transport.ObserveResponse(ctx, http.StatusOK, spentOpenAI("35s")())
		return "ok", pgw.Usage{}, nil
	}
	_, err := pgw.Call(context.Background(), gw, "RERANK", fn)
	require.NoError(t, err)
	_, err = pgw.Call(context.Background(), gw, "RERANK", fn)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, "rate_limited", ase.Reasons["r"])
	assert.InDelta(t, 35, ase.RetryAfter.Seconds(), 2)
	assert.Equal(t, 1, runs)
}

// pgw.Call and pgw.CallStream under QUOTA_FULL=wait end at once when the
// certain wait ends past the caller's deadline: a 429 *HTTPError's
// RetryAfter for Call, a reported spent window for CallStream.
func TestCallFacesWaitPastTheDeadlineEndAtOnce(t *testing.T) {
	env := map[string]string{
		"PGW_SCOPES":          "RERANK",
		"RERANK__SOURCES":     "r",
		"RERANK__R__BASE_URL": "http://127.0.0.1:1/v1",
		"RERANK__QUOTA_FULL":  "wait",
	}
	t.Run("Call", func(t *testing.T) {
		gw, _ := newGateway(t, env)
		runs := 0
		fn := func(context.Context, pgw.Source) (string, pgw.Usage, error) {
			runs++
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusTooManyRequests, RetryAfter: time.Minute}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := pgw.Call(ctx, gw, "RERANK", fn)
		require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2)
		var he *pgw.HTTPError
		require.ErrorAs(t, err, &he, "the 429 is reachable")
		assert.Equal(t, 1, runs)
	})
	t.Run("CallStream", func(t *testing.T) {
		gw, _ := newGateway(t, env)
		opens := 0
		open := func(ctx context.Context, _ pgw.Source) (pgw.Streamer[string], error) {
			opens++
			transport.ObserveResponse(ctx, http.StatusOK, spentOpenAI("1m0s")())
			return &sliceItems{items: []string{"a", "b"}}, nil
		}
		st, err := pgw.CallStream(context.Background(), gw, "RERANK", open)
		require.NoError(t, err)
		for err == nil {
			_, err = st.Recv()
		}
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, st.Close())

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = pgw.CallStream(ctx, gw, "RERANK", open)
		require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2)
		assert.Equal(t, 1, opens)
	})
}

// A breaker cooldown longer than the stall window ends a CIRCUIT_OPEN=wait
// call at once with *CircuitOpenError and the cooldown left, with no
// deadline on the caller's ctx to trigger it.
func TestCooldownPastTheStallWindowEndsAtOnce(t *testing.T) {
	env, up := singleSource(t, "wait", "60")
	env["CHAT__STALL_WINDOW_S"] = "10"
	gw, _ := newGateway(t, env)
	// A guard only: the rule must end the calls long before it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, ctx.Err(), "call %d waited", i)
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe, "call %d", i)
		assert.InDelta(t, 60, coe.RetryAfter.Seconds(), 2, "call %d", i)
	}
	assert.Equal(t, 1, up.Requests(testutil.Chat))
}

// Sources held for different reasons — one by its open breaker, one by a
// 429's Retry-After — whose certain waits both end past the deadline end
// the call at once with the quota error (not every source is held by its
// breaker), its RetryAfter the earlier of the two, under either
// CIRCUIT_OPEN mode.
func TestMixedHoldsPastTheDeadlineEndWithTheQuotaError(t *testing.T) {
	for _, mode := range []string{"wait", "fail_fast"} {
		t.Run(mode, func(t *testing.T) {
			a := testutil.NewUpstream(t)
			a.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
			b := testutil.NewUpstream(t)
			b.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "90"})
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":              "CHAT",
				"CHAT__SOURCES":           "a,b",
				"CHAT__A__BASE_URL":       a.URL,
				"CHAT__A__PRIORITY":       "0",
				"CHAT__B__BASE_URL":       b.URL,
				"CHAT__B__PRIORITY":       "1",
				"CHAT__FAILURE_THRESHOLD": "1",
				"CHAT__COOLDOWN_S":        "60",
				"CHAT__CIRCUIT_OPEN":      mode,
				"CHAT__QUOTA_FULL":        "wait",
				"CHAT__POLL_INTERVAL_S":   "0.01",
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := gw.Chat(ctx, hello())
			require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
			assert.Equal(t, map[string]string{"a": "circuit_open", "b": "retry_after"}, ase.Reasons)
			assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2, "the earlier of 60 s and 90 s")
			assert.Equal(t, 1, a.Requests(testutil.Chat))
			assert.Equal(t, 1, b.Requests(testutil.Chat))
		})
	}
}

// A certain wait that ends before the deadline is waited out even when the
// poll interval's jitter added to it would not fit: the nap is shortened
// to the deadline and the call is answered. Here the wait is 1 s, the
// jitter 2–4 s and the deadline 2.5 s away; for a Retry-After and for a
// breaker cooldown.
func TestJitterNeverCarriesAFittingWaitPastTheDeadline(t *testing.T) {
	t.Run("Retry-After", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"})
		gw, _ := newGateway(t, soloChat(up.URL, "CHAT__QUOTA_FULL", "wait", "CHAT__POLL_INTERVAL_S", "4"))
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		r, err := gw.Chat(ctx, hello())
		require.NoError(t, err)
		assert.Equal(t, testutil.DefaultAnswer, r.Content)
		assert.Equal(t, 2, up.Requests(testutil.Chat))
	})
	t.Run("cooldown", func(t *testing.T) {
		env, up := singleSource(t, "wait", "1")
		env["CHAT__POLL_INTERVAL_S"] = "4"
		gw, _ := newGateway(t, env)
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		r, err := gw.Chat(ctx, hello())
		require.NoError(t, err)
		assert.Equal(t, testutil.DefaultAnswer, r.Content)
		assert.Equal(t, 2, up.Requests(testutil.Chat))
	})
}
