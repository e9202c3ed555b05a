package pgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/retry"
)

func TestChatStreamDeliversChunksAsTheyArriveAndChatCollects(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "main",
		"CHAT__MAIN__BASE_URL": up.URL,
		"CHAT__MAIN__API_KEY":  "sk-test",
		"CHAT__MAIN__MODEL":    "fake-model",
	})
	ctx := context.Background()

	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	var got strings.Builder
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got.WriteString(ch.Delta)
	}
	require.NoError(t, st.Close())
	assert.Equal(t, testutil.DefaultAnswer, got.String())
	assert.Equal(t, "main", st.Source())
	assert.Positive(t, st.Usage().TotalTokens)
	assert.Equal(t, "fake-model", up.LastRequest(testutil.Chat).Model)
	assert.Equal(t, "Bearer sk-test", up.LastAuthorization())

	resp, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, "main", resp.Source)
	assert.Positive(t, resp.Usage.TotalTokens)
	assert.Equal(t, []string{"main:success", "main:success"}, rec.Outcomes())
	assert.Empty(t, rec.Transitions())
}

func TestEmbedSplitsByBatchSizeAndKeepsInputOrder(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                 "EMBEDDING",
		"EMBEDDING__SOURCES":         "emb",
		"EMBEDDING__EMB__BASE_URL":   up.URL,
		"EMBEDDING__EMB__BATCH_SIZE": "3",
	})
	inputs := []string{"a", "b b", "c", "d d d", "e", "f", "g g"}
	resp, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: inputs})
	require.NoError(t, err)
	require.Len(t, resp.Vectors, len(inputs))
	for i, in := range inputs {
		assert.Equal(t, testutil.FakeEmbedding(in), resp.Vectors[i], "vector %d", i)
	}
	assert.Equal(t, 3, up.Requests(testutil.Embeddings), "7 inputs in batches of 3")
	assert.Equal(t, 11, resp.Usage.TotalTokens, "the sub-batches' usage is summed")
}

func TestOCRReadsOneImageAndEveryPage(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "OCR",
		"OCR__SOURCES":          "vision",
		"OCR__VISION__BASE_URL": up.URL,
	})
	ctx := context.Background()
	img := tinyPNG(t)

	page, err := gw.OCR(ctx, pgw.OCRRequest{Image: img})
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultOCRText, page.Text)
	assert.True(t, strings.HasPrefix(up.LastRequest(testutil.OCR).ImageURL, "data:image/png;base64,"))

	pages, err := gw.OCRPages(ctx, []pgw.OCRRequest{{Image: img}, {Image: img}, {Image: img}})
	require.NoError(t, err)
	require.Len(t, pages, 3)
	for _, p := range pages {
		assert.Equal(t, testutil.DefaultOCRText, p.Text)
	}
	assert.Equal(t, 4, up.Requests(testutil.OCR))
}

func TestChatFailsOverFromA5xxSourceToAHealthyOne(t *testing.T) {
	flaky, healthy := testutil.NewUpstream(t), testutil.NewUpstream(t)
	flaky.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, Message: "overloaded"})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "flaky,healthy",
		"CHAT__FAILURE_THRESHOLD": "2",
		"CHAT__COOLDOWN_S":        "60",
		"CHAT__FLAKY__BASE_URL":   flaky.URL,
		"CHAT__HEALTHY__BASE_URL": healthy.URL,
		"CHAT__HEALTHY__PRIORITY": "1",
	})
	ctx := context.Background()

	for range 2 {
		resp, err := gw.Chat(ctx, hello())
		require.NoError(t, err)
		assert.Equal(t, "healthy", resp.Source)
	}
	// Two failures in a row trip the flaky source's breaker: the third call
	// goes straight to the healthy source.
	resp, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	assert.Equal(t, "healthy", resp.Source)
	assert.Equal(t, []string{
		"flaky:failure", "healthy:success",
		"flaky:failure", "healthy:success",
		"healthy:success",
	}, rec.Outcomes())
	assert.Equal(t, []string{"flaky:closed>open"}, rec.Transitions())
	assert.Equal(t, 2, flaky.Requests(testutil.Chat))
	opened := rec.Changes()[0]
	assert.Equal(t, uint64(2), opened.Counts.Failures, "the change carries the counts that caused it")
	assert.Equal(t, uint64(2), opened.Counts.ConsecutiveFailures)
	assert.Equal(t, []string{pgw.ResultSuccess, pgw.ResultSuccess, pgw.ResultSuccess}, rec.Results())

	first := rec.Attempts()[0]
	assert.Equal(t, http.StatusServiceUnavailable, first.Status)
	var he *pgw.HTTPError
	require.ErrorAs(t, first.Err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
}

func TestFatalAnswersOpenTheBreakerAtOnceAndFailOver(t *testing.T) {
	cases := []struct {
		name  string
		reply testutil.Reply
	}{
		{"401 invalid key", testutil.Reply{Status: http.StatusUnauthorized, Message: "Incorrect API key provided"}},
		{"403 forbidden", testutil.Reply{Status: http.StatusForbidden}},
		{"429 insufficient_quota", testutil.Reply{Status: http.StatusTooManyRequests, Message: "You exceeded your current quota", Code: "insufficient_quota"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, good := testutil.NewUpstream(t), testutil.NewUpstream(t)
			bad.SetDefault(testutil.Chat, c.reply)
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":           "CHAT",
				"CHAT__SOURCES":        "bad,good",
				"CHAT__BAD__BASE_URL":  bad.URL,
				"CHAT__GOOD__BASE_URL": good.URL,
				"CHAT__GOOD__PRIORITY": "1",
			})
			ctx := context.Background()

			resp, err := gw.Chat(ctx, hello())
			require.NoError(t, err)
			assert.Equal(t, "good", resp.Source)
			assert.Equal(t, []string{"bad:fatal", "good:success"}, rec.Outcomes())
			assert.Equal(t, []string{"bad:closed>open"}, rec.Transitions(), "one fatal answer opens the breaker")
			snap, err := gw.Snapshot(ctx, "CHAT", "bad")
			require.NoError(t, err)
			assert.Equal(t, pgw.StateOpen, snap.State)

			_, err = gw.Chat(ctx, hello())
			require.NoError(t, err)
			assert.Equal(t, 1, bad.Requests(testutil.Chat), "an open source is not called again")
		})
	}
}

func TestCallerErrorIsReturnedAtOnceWithoutRetry(t *testing.T) {
	up, other := testutil.NewUpstream(t), testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusBadRequest, Message: "max_tokens is too large"})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a,b",
		"CHAT__A__BASE_URL": up.URL,
		"CHAT__B__BASE_URL": other.URL,
		"CHAT__B__PRIORITY": "1",
	})
	_, err := gw.Chat(context.Background(), hello())
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Contains(t, he.Message, "max_tokens is too large")
	assert.Equal(t, 1, up.Requests(testutil.Chat))
	assert.Zero(t, other.Requests(testutil.Chat), "a caller error is not failed over")
	assert.Equal(t, []string{"a:caller_error"}, rec.Outcomes())
	assert.Empty(t, rec.Transitions())
	assert.Equal(t, []string{pgw.ResultCallerError}, rec.Results())
}

func TestTooManyRequestsHoldsTheSourceOffForItsRetryAfter(t *testing.T) {
	const retryAfter = 300 * time.Millisecond
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "0.3"})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "only",
		"CHAT__CIRCUIT_OPEN":   "wait",
		"CHAT__ONLY__BASE_URL": up.URL,
	})
	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)

	att := rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeThrottle, att[0].Outcome)
	assert.Equal(t, http.StatusTooManyRequests, att[0].Status)
	assert.Equal(t, retryAfter, att[0].RetryAfter)
	assert.Equal(t, pgw.OutcomeSuccess, att[1].Outcome)
	gap := att[1].Start.Sub(att[0].Start.Add(att[0].Latency))
	assert.GreaterOrEqual(t, gap, retryAfter, "the second attempt waits for the upstream's Retry-After")
	assert.Empty(t, rec.Transitions(), "a 429 is not a breaker failure")
}

// singleSource is the env of a one-source CHAT scope whose first answer is a
// 503 and whose breaker opens on one failure.
func singleSource(t *testing.T, mode string, cooldown string) (map[string]string, *testutil.Upstream) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	return map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "solo",
		"CHAT__CIRCUIT_OPEN":      mode,
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__COOLDOWN_S":        cooldown,
		"CHAT__SOLO__BASE_URL":    up.URL,
	}, up
}

func TestCircuitOpenWaitWaitsOutTheCooldownThenSucceeds(t *testing.T) {
	const cooldown = 200 * time.Millisecond
	env, up := singleSource(t, "wait", "0.2")
	gw, rec := newGateway(t, env)

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, testutil.DefaultAnswer, resp.Content)
	assert.Equal(t, []string{"solo:failure", "solo:success"}, rec.Outcomes())
	assert.Equal(t, []string{"solo:closed>open", "solo:open>half_open", "solo:half_open>closed"}, rec.Transitions())
	assert.Equal(t, 2, up.Requests(testutil.Chat), "no attempt while the breaker is open")

	att := rec.Attempts()
	gap := att[1].Start.Sub(att[0].Start.Add(att[0].Latency))
	assert.GreaterOrEqual(t, gap, cooldown, "the probe runs after the cooldown")
	assert.Equal(t, []string{pgw.ResultSuccess}, rec.Results())
}

func TestCircuitOpenFailFastReturnsCircuitOpenErrorWithTheTimeLeft(t *testing.T) {
	// The test never waits for the cooldown to end: a minute, which no
	// stall of a loaded machine between the 503 and the retries outlasts
	// (0.3 s did: the retry then went to the source as a probe).
	const cooldown = time.Minute
	env, up := singleSource(t, "fail_fast", "60")
	gw, rec := newGateway(t, env)
	ctx := context.Background()

	start := time.Now()
	_, err := gw.Chat(ctx, hello())
	took := time.Since(start)
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe)
	assert.Equal(t, pgw.CodeCircuitOpen, coe.Code())
	assert.Equal(t, "CHAT", coe.Scope)
	assert.Equal(t, []string{"solo"}, coe.Sources)
	assert.LessOrEqual(t, coe.RetryAfter, cooldown)
	assert.GreaterOrEqual(t, coe.RetryAfter, cooldown-took, "RetryAfter is the cooldown left, not a guess")
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he, "the last attempt's error is reachable")
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)

	// Asked again at once: no upstream call, and less time left.
	_, err = gw.Chat(ctx, hello())
	var again *pgw.CircuitOpenError
	require.ErrorAs(t, err, &again)
	assert.Positive(t, again.RetryAfter)
	assert.LessOrEqual(t, again.RetryAfter, coe.RetryAfter)
	assert.Equal(t, 1, up.Requests(testutil.Chat))
	assert.Equal(t, []string{"solo:closed>open"}, rec.Transitions())
	assert.Equal(t, []string{pgw.ResultCircuitOpen, pgw.ResultCircuitOpen}, rec.Results())
}

func TestCloseThenCallReturnsErrClosed(t *testing.T) {
	up := testutil.NewUpstream(t)
	s := map[string]string{
		"CHAT__SOURCES":          "a",
		"CHAT__A__BASE_URL":      up.URL,
		"EMBEDDING__SOURCES":     "a",
		"EMBEDDING__A__BASE_URL": up.URL,
		"OCR__SOURCES":           "a",
		"OCR__A__BASE_URL":       up.URL,
	}
	gw, _ := newGateway(t, s)
	ctx := context.Background()
	require.NoError(t, gw.Close())
	require.NoError(t, gw.Close(), "Close is idempotent")

	_, err := gw.Chat(ctx, hello())
	assert.ErrorIs(t, err, pgw.ErrClosed)
	_, err = gw.ChatStream(ctx, hello())
	assert.ErrorIs(t, err, pgw.ErrClosed)
	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	assert.ErrorIs(t, err, pgw.ErrClosed)
	_, err = gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
	assert.ErrorIs(t, err, pgw.ErrClosed)
	_, err = pgw.Call(ctx, gw, "CHAT", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
		t.Error("fn must not run after Close")
		return 0, pgw.Usage{}, nil
	})
	assert.ErrorIs(t, err, pgw.ErrClosed)
	assert.Zero(t, up.TotalRequests())
}

func TestCloseInterruptsAWaitingCallAndAnOpenStream(t *testing.T) {
	up := testutil.NewUpstream(t)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	up.SetDefault(testutil.Chat, testutil.Reply{BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
	}})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":                 "CHAT,WAITING",
		"CHAT__SOURCES":              "a",
		"CHAT__A__BASE_URL":          up.URL,
		"WAITING__SOURCES":           "b",
		"WAITING__CIRCUIT_OPEN":      "wait",
		"WAITING__FAILURE_THRESHOLD": "1",
		"WAITING__COOLDOWN_S":        "600",
		// A wait that cannot end within the stall window ends at once: this
		// one must fit, so the call is still waiting when Close comes.
		"WAITING__STALL_WINDOW_S": "900",
	})
	ctx := context.Background()

	// A stream that has its first chunk and is held before the second.
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	first, err := st.Recv()
	require.NoError(t, err)
	require.NotEmpty(t, first.Delta)

	// A call that opened its only source's breaker and now waits 600 s.
	waiting := make(chan error, 1)
	go func() {
		_, err := pgw.Call(ctx, gw, "WAITING", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusBadGateway}
		})
		waiting <- err
	}()
	rec.waitFor(t, pgw.StateOpen)

	require.NoError(t, gw.Close())
	assert.ErrorIs(t, <-waiting, pgw.ErrClosed)
	_, err = st.Recv()
	assert.ErrorIs(t, err, pgw.ErrClosed)
	require.NoError(t, st.Close())
}

func TestCallRunsAnyFunctionInACustomScopeWithFailOver(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":               "RERANK",
		"RERANK__SOURCES":          "primary,backup",
		"RERANK__BACKUP__PRIORITY": "1",
		"RERANK__PRIMARY__MODEL":   "m1",
	})
	got, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if _, ok := ctx.Deadline(); !ok {
			return "", pgw.Usage{}, errors.New("no deadline: the source's timeout is missing")
		}
		if src.Name == "primary" {
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusForbidden, Message: "key revoked"}
		}
		return "ranked by " + src.Name, pgw.Usage{TotalTokens: 7}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ranked by backup", got)
	assert.Equal(t, []string{"primary:fatal", "backup:success"}, rec.Outcomes())
	assert.Equal(t, 7, rec.Attempts()[1].Usage.TotalTokens)
	assert.Equal(t, 2, rec.Attempts()[1].Attempt)
}

func TestUnknownScopeErrorListsTheConfiguredScopes(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT,RERANK", "CHAT__SOURCES": "a",
		"CHAT__A__BASE_URL": "http://127.0.0.1:1/v1", "RERANK__SOURCES": "b"})
	ctx := context.Background()
	_, err := pgw.Call(ctx, gw, "RERANKER", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 0, pgw.Usage{}, nil })
	var use *pgw.UnknownScopeError
	require.ErrorAs(t, err, &use)
	assert.Equal(t, []string{"CHAT", "RERANK"}, use.Configured)
	assert.Equal(t, `pgw: scope "RERANKER" is not configured (configured: CHAT, RERANK); list it in PGW_SCOPES and set RERANKER__SOURCES`, err.Error())

	_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
	require.ErrorAs(t, err, &use)
	assert.Equal(t, "EMBEDDING", use.Scope)
}

func TestNewFromEnvReportsEveryBadKeyInOneConfigError(t *testing.T) {
	for k, v := range map[string]string{
		"PGW_BREAKER_BACKEND":      "postgres",
		"PGW_REDIS_DOWN":           "maybe",
		"PGW_SCOPES":               "CHAT,EMBEDDING",
		"CHAT__SOURCES":            "eu-1",
		"CHAT__CIRCUIT_OPEN":       "sometimes",
		"CHAT__COOLDOWN_S":         "-1",
		"CHAT__EU_1__BASE_URL":     "ftp://example.com",
		"CHAT__EU_1__API_KEY":      "sk-secret-value\n",
		"CHAT__EU_1__TIMEOUT_S":    "NaN",
		"EMBEDDING__SOURCES":       "e",
		"EMBEDDING__E__BATCH_SIZE": "-3",
		"EMBEDDING__QUOTA_FULL":    "",
	} {
		t.Setenv(k, v)
	}
	_, err := pgw.NewFromEnv(context.Background())
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, pgw.CodeConfig, ce.Code())
	var keys []string
	for _, p := range ce.Problems {
		keys = append(keys, p.Key)
		assert.NotEmpty(t, p.Legal, "%s names the legal values", p.Key)
	}
	assert.ElementsMatch(t, []string{
		"PGW_BREAKER_BACKEND", "PGW_REDIS_DOWN",
		"CHAT__CIRCUIT_OPEN", "CHAT__COOLDOWN_S",
		"CHAT__EU_1__BASE_URL", "CHAT__EU_1__API_KEY", "CHAT__EU_1__TIMEOUT_S",
		"EMBEDDING__E__BATCH_SIZE", "EMBEDDING__QUOTA_FULL",
		"EMBEDDING__E__BASE_URL", // required by the default transport, in the same error
	}, keys)
	assert.NotContains(t, err.Error(), "sk-secret-value", "secrets never appear in errors")
	assert.Contains(t, err.Error(), "EMBEDDING__E__BASE_URL unset (legal: an absolute http(s) URL")
	assert.Contains(t, err.Error(), `EMBEDDING__QUOTA_FULL="" (legal:`, "set to empty is not unset")
}

func TestDefaultTransportSourcesWithoutBaseURLAreAConfigError(t *testing.T) {
	env := map[string]string{
		"PGW_SCOPES":        "CHAT,OCR,RERANK",
		"CHAT__SOURCES":     "a,b-2",
		"CHAT__A__BASE_URL": "http://127.0.0.1:1/v1",
		"OCR__SOURCES":      "r",
		"RERANK__SOURCES":   "x", // Call functions may need no URL
	}
	s, err := config.FromMap(env)
	require.NoError(t, err)
	_, err = pgw.New(context.Background(), *s)
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	var keys []string
	for _, p := range ce.Problems {
		keys = append(keys, p.Key)
	}
	assert.Equal(t, []string{"CHAT__B_2__BASE_URL", "OCR__R__BASE_URL"}, keys)

	gw, err := pgw.New(context.Background(), *s, pgw.WithChatTransport(up{}), pgw.WithOCRTransport(up{}))
	require.NoError(t, err, "a plugged-in transport may need no URL")
	require.NoError(t, gw.Close())
}

// up is a transport that needs no URL.
type up struct{}

func (up) ChatStream(context.Context, pgw.Source, pgw.ChatRequest) (pgw.ChatStream, error) {
	return nil, errors.New("unused")
}

func (up) OCR(context.Context, pgw.Source, pgw.OCRRequest) (pgw.OCRResponse, error) {
	return pgw.OCRResponse{}, errors.New("unused")
}

func TestNewValidatesSettingsBuiltInCode(t *testing.T) {
	_, err := pgw.New(context.Background(), pgw.Settings{
		BreakerBackend: "etcd",
		Scopes: []pgw.ScopeSettings{{
			Name:        "CHAT",
			CircuitOpen: "later",
			Sources:     []pgw.Source{{Name: "a", BaseURL: "not a url"}},
		}},
	})
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	var keys []string
	for _, p := range ce.Problems {
		keys = append(keys, p.Key)
	}
	assert.ElementsMatch(t, []string{"PGW_BREAKER_BACKEND", "CHAT__CIRCUIT_OPEN", "CHAT__A__BASE_URL"}, keys)
}

func TestNoopBreakerNeverOpensAndTheAttemptBudgetEndsTheCall(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusBadGateway})
	gw, rec := newGateway(t, map[string]string{
		"PGW_BREAKER_BACKEND":     "noop",
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "a",
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__MAX_ATTEMPTS":      "3",
		"CHAT__A__BASE_URL":       up.URL,
	})
	_, err := gw.Chat(context.Background(), hello())
	var gue *pgw.GatewayUnavailableError
	require.ErrorAs(t, err, &gue)
	assert.Equal(t, 3, gue.Attempts)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadGateway, he.StatusCode)
	assert.Equal(t, 3, up.Requests(testutil.Chat))
	assert.Empty(t, rec.Transitions())
}

func TestFirstTokenTimeoutFailsOverToAnotherSource(t *testing.T) {
	slow, fast := testutil.NewUpstream(t), testutil.NewUpstream(t)
	slow.SetDefault(testutil.Chat, testutil.Reply{FirstTokenDelay: time.Minute})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "slow,fast",
		"CHAT__SLOW__BASE_URL": slow.URL,
		"CHAT__FAST__BASE_URL": fast.URL,
		"CHAT__FAST__PRIORITY": "1",
	}, pgw.WithFirstTokenTimeout(50*time.Millisecond))

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "fast", resp.Source)
	att := rec.Attempts()
	require.Len(t, att, 2)
	assert.Equal(t, pgw.OutcomeFailure, att[0].Outcome)
	assert.ErrorIs(t, att[0].Err, retry.ErrFirstTokenTimeout)
}

func TestCloseIsSafeConcurrentlyWithCalls(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "CHAT,EMBEDDING",
		"CHAT__SOURCES":          "a",
		"CHAT__A__BASE_URL":      up.URL,
		"CHAT__A__MAX_IN_FLIGHT": "4",
		"EMBEDDING__SOURCES":     "a",
		"EMBEDDING__A__BASE_URL": up.URL,
	})
	ctx := context.Background()
	const callers = 16
	started := make(chan struct{}, callers)
	errs := make(chan error, callers*3)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for range 3 {
				var err error
				if i%2 == 0 {
					_, err = gw.Chat(ctx, hello())
				} else {
					_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
				}
				errs <- err
			}
		}()
	}
	for range callers {
		<-started
	}
	closed := make(chan error, 2)
	go func() { closed <- gw.Close() }()
	go func() { closed <- gw.Close() }()
	require.NoError(t, <-closed)
	require.NoError(t, <-closed)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			assert.ErrorIs(t, err, pgw.ErrClosed)
		}
	}
}

func TestCallFunctionPanicIsReraisedAndReported(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{"PGW_SCOPES": "JOB", "JOB__SOURCES": "a"})
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = pgw.Call(context.Background(), gw, "JOB", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
			panic("boom")
		})
	})
	assert.Equal(t, []string{"a:panic"}, rec.Outcomes())
	// The panic gave everything back: the next call runs.
	v, err := pgw.Call(context.Background(), gw, "JOB", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

func TestClosingAStreamEarlyAbandonsItAndFreesItsSlot(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "a",
		"CHAT__QUOTA_FULL":       "fail_fast",
		"CHAT__A__BASE_URL":      up.URL,
		"CHAT__A__MAX_IN_FLIGHT": "1",
	})
	ctx := context.Background()
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)

	_, err = gw.Chat(ctx, hello())
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "the open stream holds the only in-flight slot")

	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "Close twice is fine")
	_, err = gw.Chat(ctx, hello())
	require.NoError(t, err, "closing the stream gave the slot back")
	assert.Equal(t, []string{pgw.ResultQuotaExhausted, pgw.ResultAbandoned, pgw.ResultSuccess}, rec.Results())
	assert.Equal(t, []string{"a:abandoned", "a:success"}, rec.Outcomes())
}
