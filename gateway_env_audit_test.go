package pgw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// What a user touches first, pinned as a user meets it: a GatewayClient
// built from env keys, its default OpenAI-compatible transports, and Close.

// auditGwThreeFaces is CHAT, EMBEDDING and OCR, each one source "a" on up,
// on the given breaker backend, plus extra key/value pairs.
func auditGwThreeFaces(up *testutil.Upstream, backend string, extra ...string) map[string]string {
	env := map[string]string{
		"PGW_BREAKER_BACKEND": backend,
		"PGW_SCOPES":          "CHAT,EMBEDDING,OCR",
		"CHAT__SOURCES":       "a", "CHAT__A__BASE_URL": up.URL,
		"EMBEDDING__SOURCES": "a", "EMBEDDING__A__BASE_URL": up.URL,
		"OCR__SOURCES": "a", "OCR__A__BASE_URL": up.URL,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// auditGwGoroutinesBackTo waits until the process runs no more goroutines
// than base; the root package's tests run one at a time, so a count above
// it after Close is something the gateway left running.
func auditGwGoroutinesBackTo(t *testing.T, base int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%s: %d goroutines left running (%d before New):\n%s", what, n-base, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseLeavesNothingRunningOnEveryBackend: "Close releases
// everything". A gateway that served a call on every face and still has a
// stream open, on the memory and on the Redis backends (prober, outcome
// writer, go-redis pool, the default transports' connections), runs no
// goroutine of its own once Close has returned.
func TestCloseLeavesNothingRunningOnEveryBackend(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			extra := []string{}
			if backend == "redis" {
				srv := testutil.StartRedis(t)
				extra = append(extra, "PGW_REDIS_URL", "redis://"+srv.Addr, "PGW_REDIS_PREFIX", "pgw-gw-env-audit")
			}
			s, err := config.FromMap(auditGwThreeFaces(up, backend, extra...))
			require.NoError(t, err)
			runtime.GC()
			base := runtime.NumGoroutine()

			ctx := context.Background()
			gw, err := pgw.New(ctx, *s, pgw.WithLogger(testLogger(t)))
			require.NoError(t, err)
			_, err = gw.Chat(ctx, hello())
			require.NoError(t, err)
			_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x", "y"}})
			require.NoError(t, err)
			_, err = gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
			require.NoError(t, err)
			st, err := gw.ChatStream(ctx, hello())
			require.NoError(t, err)
			_, err = st.Recv()
			require.NoError(t, err)

			require.NoError(t, gw.Close())
			_, err = st.Recv()
			assert.ErrorIs(t, err, pgw.ErrClosed, "the open stream was closed by Close")
			auditGwGoroutinesBackTo(t, base, backend)
		})
	}
}

// TestNewThatFailsOnRedisLeavesNothingRunning: under
// PGW_REDIS_DOWN=fail_closed a Redis that refuses makes New fail; what New
// had built by then (client, prober, writer) is released with it.
func TestNewThatFailsOnRedisLeavesNothingRunning(t *testing.T) {
	up := testutil.NewUpstream(t)
	s, err := config.FromMap(auditGwThreeFaces(up, "redis",
		"PGW_REDIS_URL", "redis://127.0.0.1:1", "PGW_REDIS_DOWN", "fail_closed"))
	require.NoError(t, err)
	runtime.GC()
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gw, err := pgw.New(ctx, *s, pgw.WithLogger(testLogger(t)))
	require.Error(t, err)
	assert.Nil(t, gw)
	auditGwGoroutinesBackTo(t, base, "a failed New")
}

// TestNoopBreakerStillAppliesQuotas: PGW_BREAKER_BACKEND=noop "always
// allows: no breaker; quotas still apply". A source at RPM=1 admits its
// one request of the minute, and the next call of a fail_fast scope ends
// at once with quota_exhausted and the time until the bucket refills,
// without reaching the upstream; on every face.
func TestNoopBreakerStillAppliesQuotas(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, auditGwThreeFaces(up, "noop",
		"CHAT__A__RPM", "1", "CHAT__QUOTA_FULL", "fail_fast",
		"EMBEDDING__A__RPM", "1", "EMBEDDING__QUOTA_FULL", "fail_fast",
		"OCR__A__RPM", "1", "OCR__QUOTA_FULL", "fail_fast"))
	ctx := context.Background()
	faces := map[string]func() error{
		"CHAT": func() error { _, err := gw.Chat(ctx, hello()); return err },
		"EMBEDDING": func() error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
			return err
		},
		"OCR": func() error { _, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)}); return err },
	}
	for name, call := range faces {
		before := up.TotalRequests()
		require.NoError(t, call(), "%s: the minute's one request", name)
		err := call()
		var ae *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ae, "%s: the noop breaker let the quota refuse", name)
		assert.Equal(t, "quota_exhausted", ae.Reason, name)
		assert.Greater(t, ae.RetryAfter, 50*time.Second, "%s: a minute's bucket refills one request per minute", name)
		assert.Equal(t, before+1, up.TotalRequests(), "%s: the refused call sent nothing", name)
	}
}

// TestEmptyAPIKeySendsNoCredential: API_KEY's default is "empty (none
// sent)": the default transports send no credential header at all — not an
// "Authorization: Bearer " with nothing after it, nor an empty api-key — on
// every face, for an openai and an azure source; a source with a key sends
// it in its provider's header.
func TestEmptyAPIKeySendsNoCredential(t *testing.T) {
	for _, provider := range []string{"openai", "azure"} {
		t.Run(provider, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			gw, _ := newGateway(t, auditGwThreeFaces(up, "memory",
				"CHAT__A__PROVIDER", provider, "EMBEDDING__A__PROVIDER", provider, "OCR__A__PROVIDER", provider))
			ctx := context.Background()
			_, err := gw.Chat(ctx, hello())
			require.NoError(t, err)
			_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
			require.NoError(t, err)
			_, err = gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
			require.NoError(t, err)
			for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings, testutil.OCR} {
				h := up.LastRequest(ep).Header
				for _, name := range []string{"Authorization", "Api-Key", "X-Api-Key"} {
					_, sent := h[name]
					assert.False(t, sent, "%s request sent a %s header: %q", ep, name, h.Get(name))
				}
			}
		})
	}
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, auditGwThreeFaces(up, "memory", "OCR__A__API_KEY", "sk-audit-ocr-key"))
	_, err := gw.OCR(context.Background(), pgw.OCRRequest{Image: tinyPNG(t)})
	require.NoError(t, err)
	assert.Equal(t, "Bearer sk-audit-ocr-key", up.LastRequest(testutil.OCR).Authorization)
}

// TestA402OpensTheBreakerAtOnceOnEveryFace: a plain 402 Payment Required
// (no billing code in its body) is fatal like 401 and 403: one answer
// opens the source's breaker and the call fails over, on every face.
func TestA402OpensTheBreakerAtOnceOnEveryFace(t *testing.T) {
	bad, good := testutil.NewUpstream(t), testutil.NewUpstream(t)
	for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings, testutil.OCR} {
		bad.SetDefault(ep, testutil.Reply{Status: http.StatusPaymentRequired, Message: "payment required"})
	}
	env := map[string]string{"PGW_SCOPES": "CHAT,EMBEDDING,OCR"}
	for _, sc := range []string{"CHAT", "EMBEDDING", "OCR"} {
		env[sc+"__SOURCES"] = "bad,good"
		env[sc+"__BAD__BASE_URL"] = bad.URL
		env[sc+"__GOOD__BASE_URL"] = good.URL
		env[sc+"__GOOD__PRIORITY"] = "1"
	}
	gw, rec := newGateway(t, env)
	ctx := context.Background()
	faces := []struct {
		scope string
		call  func() error
	}{
		{"CHAT", func() error { _, err := gw.Chat(ctx, hello()); return err }},
		{"EMBEDDING", func() error { _, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}}); return err }},
		{"OCR", func() error { _, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)}); return err }},
	}
	for i, f := range faces {
		require.NoError(t, f.call(), f.scope)
		snap, err := gw.Snapshot(ctx, f.scope, "bad")
		require.NoError(t, err)
		assert.Equal(t, pgw.StateOpen, snap.State, "%s: one 402 opens the breaker", f.scope)
		require.NoError(t, f.call(), f.scope)
		assert.Equal(t, i+1, bad.TotalRequests(), "%s: the open source is not called again", f.scope)
	}
	assert.Equal(t, []string{"bad:fatal", "good:success", "good:success",
		"bad:fatal", "good:success", "good:success", "bad:fatal", "good:success", "good:success"}, rec.Outcomes())
}

// TestAnyOtherStatusIsAFailureThatFailsOver: a status outside the named
// rows (429; 401/402/403; 400/404/413/422) is an ordinary failure: the
// call fails over to the next source, and the breaker counts it without
// opening at once.
func TestAnyOtherStatusIsAFailureThatFailsOver(t *testing.T) {
	for _, status := range []int{http.StatusRequestTimeout, http.StatusConflict, http.StatusGone,
		http.StatusTeapot, http.StatusUnavailableForLegalReasons, http.StatusNotImplemented} {
		bad, good := testutil.NewUpstream(t), testutil.NewUpstream(t)
		bad.SetDefault(testutil.Chat, testutil.Reply{Status: status, Message: "upstream said no"})
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "bad,good",
			"CHAT__BAD__BASE_URL": bad.URL, "CHAT__GOOD__BASE_URL": good.URL, "CHAT__GOOD__PRIORITY": "1",
		})
		resp, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err, "status %d", status)
		assert.Equal(t, "good", resp.Source, "status %d", status)
		assert.Equal(t, []string{"bad:failure", "good:success"}, rec.Outcomes(), "status %d", status)
		assert.Empty(t, rec.Transitions(), "status %d: one failure does not open the breaker", status)
	}
}

// auditGwHeldUpstream answers embeddings and OCR (non-streamed chat)
// requests, each held until release is closed, and keeps the peak number
// of requests in flight at once. arrived gets one value per request.
type auditGwHeldUpstream struct {
	URL     string
	release chan struct{}
	arrived chan struct{}
	mu      sync.Mutex
	now     int
	peak    int
}

func newAuditGwHeldUpstream(t *testing.T) *auditGwHeldUpstream {
	u := &auditGwHeldUpstream{release: make(chan struct{}), arrived: make(chan struct{}, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.now++
		u.peak = max(u.peak, u.now)
		u.mu.Unlock()
		defer func() { u.mu.Lock(); u.now--; u.mu.Unlock() }()
		u.arrived <- struct{}{}
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			_, _ = io.WriteString(w, `{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"page"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/v1"
	return u
}

func (u *auditGwHeldUpstream) Peak() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peak
}

// holdThenRelease waits for n requests to be in flight, gives a part
// beyond the bound time to show up, then lets every request answer.
func (u *auditGwHeldUpstream) holdThenRelease(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for range n {
		select {
		case <-u.arrived:
		case <-timeout:
			t.Fatalf("only some of %d parts reached the upstream", n)
		}
	}
	// A part beyond the bound would arrive now; a slow machine can only
	// hide one, never invent one.
	time.Sleep(200 * time.Millisecond)
	close(u.release)
}

// TestPartsRunFourAtOnceByDefaultAndTheInFlightSumBoundsThem:
// WithConcurrency's default is 4 parts of one call at once, for Embed's
// sub-batches and OCRPages' pages; when every source of the scope has a
// MAX_IN_FLIGHT, their sum bounds it too, so under QUOTA_FULL=fail_fast no
// part is refused the slot another part of the same call holds.
func TestPartsRunFourAtOnceByDefaultAndTheInFlightSumBoundsThem(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		for _, face := range []string{"EMBEDDING", "OCR"} {
			up := newAuditGwHeldUpstream(t)
			gw, _ := newGateway(t, auditGwSplit(face, map[string]string{
				"PGW_SCOPES": face, face + "__SOURCES": "a", face + "__A__BASE_URL": up.URL,
			}))
			done := make(chan error, 1)
			go func() { done <- auditGwTenParts(t, gw, face) }()
			up.holdThenRelease(t, 4)
			require.NoError(t, <-done, face)
			assert.Equal(t, 4, up.Peak(), "%s: parts at once by default", face)
		}
	})
	t.Run("in-flight sum", func(t *testing.T) {
		for _, face := range []string{"EMBEDDING", "OCR"} {
			up := newAuditGwHeldUpstream(t)
			gw, _ := newGateway(t, auditGwSplit(face, map[string]string{
				"PGW_SCOPES": face, face + "__SOURCES": "a,b", face + "__QUOTA_FULL": "fail_fast",
				face + "__A__BASE_URL": up.URL, face + "__A__MAX_IN_FLIGHT": "1",
				face + "__B__BASE_URL": up.URL, face + "__B__MAX_IN_FLIGHT": "2",
			}), pgw.WithConcurrency(8))
			done := make(chan error, 1)
			go func() { done <- auditGwTenParts(t, gw, face) }()
			up.holdThenRelease(t, 3)
			require.NoError(t, <-done, "%s: no part was refused a slot its siblings held", face)
			assert.Equal(t, 3, up.Peak(), "%s: the sources' MAX_IN_FLIGHT sum bounds the parts", face)
		}
	})
}

// auditGwSplit gives every source of an EMBEDDING env BATCH_SIZE=1, so that
// ten inputs are ten sub-batches; an OCR env is returned as it is.
func auditGwSplit(face string, env map[string]string) map[string]string {
	if face == "EMBEDDING" {
		for _, name := range strings.Split(env["EMBEDDING__SOURCES"], ",") {
			env["EMBEDDING__"+strings.ToUpper(name)+"__BATCH_SIZE"] = "1"
		}
	}
	return env
}

// auditGwTenParts runs one call of ten parts on face.
func auditGwTenParts(t *testing.T, gw *pgw.GatewayClient, face string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if face == "EMBEDDING" {
		resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: strings.Split("a b c d e f g h i j", " ")})
		if err == nil && len(resp.Vectors) != 10 {
			return fmt.Errorf("%d vectors for 10 inputs", len(resp.Vectors))
		}
		return err
	}
	pages := make([]pgw.OCRRequest, 10)
	for i := range pages {
		pages[i] = pgw.OCRRequest{Image: tinyPNG(t)}
	}
	out, err := gw.OCRPages(ctx, pages)
	if err == nil && len(out) != 10 {
		return fmt.Errorf("%d results for 10 pages", len(out))
	}
	return err
}

// TestA5xxRetryAfterIsKeptButHoldsNothingOff: only a 429's Retry-After
// holds a source off. A 503 with Retry-After is an ordinary failure: its
// HTTPError keeps the Retry-After for the caller to read, and the next
// attempt on the same (only) source follows the backoff, not the minute
// the 503 asked for.
func TestA5xxRetryAfterIsKeptButHoldsNothingOff(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "60", Message: "maintenance"})
	gw, rec := newGateway(t, oneSource(up.URL, "CHAT__MAX_ATTEMPTS", "2"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err, "the second attempt was not held off for the 503's minute")
	assert.Equal(t, []string{"a:failure", "a:success"}, rec.Outcomes())

	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "60", Message: "maintenance"})
	_, err = gw.Chat(ctx, hello())
	var gue *pgw.GatewayUnavailableError
	require.ErrorAs(t, err, &gue)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	assert.Equal(t, time.Minute, he.RetryAfter, "the 503's Retry-After, for the caller")
}

// TestFromTheEnvironmentEveryScopeFollowsCircuitOpen is the end-to-end run
// through the process environment (t.Setenv, NewFromEnv — not FromMap): one
// gateway with CHAT, EMBEDDING and OCR, each a single source whose first
// answer is a 503 that opens its breaker. Under CIRCUIT_OPEN=fail_fast each
// face ends at once with *CircuitOpenError (the cooldown left, the 503
// reachable); under wait each waits the cooldown out and is served.
func TestFromTheEnvironmentEveryScopeFollowsCircuitOpen(t *testing.T) {
	for _, mode := range []string{"fail_fast", "wait"} {
		t.Run(mode, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			// fail_fast: a cooldown no retry outlives; wait: a short one.
			cooldown := map[string]string{"fail_fast": "30", "wait": "0.2"}[mode]
			t.Setenv("PGW_SCOPES", "CHAT,EMBEDDING,OCR")
			for _, sc := range []string{"CHAT", "EMBEDDING", "OCR"} {
				t.Setenv(sc+"__SOURCES", "solo")
				t.Setenv(sc+"__SOLO__BASE_URL", up.URL)
				t.Setenv(sc+"__CIRCUIT_OPEN", mode)
				t.Setenv(sc+"__FAILURE_THRESHOLD", "1")
				t.Setenv(sc+"__COOLDOWN_S", cooldown)
				t.Setenv(sc+"__POLL_INTERVAL_S", "0.01")
			}
			rec := newRecorder()
			gw, err := pgw.NewFromEnv(context.Background(), pgw.WithLogger(testLogger(t)), pgw.WithObserver(rec), fastBackoff)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, gw.Close()) })
			assert.Equal(t, []string{"CHAT", "EMBEDDING", "OCR"}, gw.Scopes())

			faces := []struct {
				scope string
				ep    testutil.Endpoint
				call  func(context.Context) error
			}{
				{"CHAT", testutil.Chat, func(ctx context.Context) error { _, err := gw.Chat(ctx, hello()); return err }},
				{"EMBEDDING", testutil.Embeddings, func(ctx context.Context) error {
					_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
					return err
				}},
				{"OCR", testutil.OCR, func(ctx context.Context) error {
					_, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
					return err
				}},
			}
			for _, f := range faces {
				up.Enqueue(f.ep, testutil.Reply{Status: http.StatusServiceUnavailable, Message: "restarting"})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := f.call(ctx)
				cancel()
				if mode == "wait" {
					require.NoError(t, err, "%s: waited the cooldown out", f.scope)
					assert.Equal(t, 2, up.Requests(f.ep), "%s: the 503, then the probe", f.scope)
					continue
				}
				var coe *pgw.CircuitOpenError
				require.ErrorAs(t, err, &coe, f.scope)
				assert.Equal(t, f.scope, coe.Scope)
				assert.Equal(t, []string{"solo"}, coe.Sources, f.scope)
				assert.Greater(t, coe.RetryAfter, time.Duration(0), f.scope)
				assert.LessOrEqual(t, coe.RetryAfter, 30*time.Second, "%s: at most the cooldown", f.scope)
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he, "%s: the 503 that opened the breaker is reachable", f.scope)
				assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
				assert.Equal(t, 1, up.Requests(f.ep), "%s: an open source is not called", f.scope)
			}
			want := map[string][]string{
				"fail_fast": {"solo:failure", "solo:failure", "solo:failure"},
				"wait":      {"solo:failure", "solo:success", "solo:failure", "solo:success", "solo:failure", "solo:success"},
			}[mode]
			assert.Equal(t, want, rec.Outcomes())
		})
	}
}

// TestA429RetryAfterAsAnHTTPDateHoldsTheSourceOff: Retry-After in its
// HTTP-date form holds the source off like the seconds form, through the
// default transport and the whole gateway: under QUOTA_FULL=fail_fast the
// call ends with quota_exhausted and the time left until that date, the
// next call is refused without reaching the upstream, and the 429 is
// reachable with errors.As.
func TestA429RetryAfterAsAnHTTPDateHoldsTheSourceOff(t *testing.T) {
	up := testutil.NewUpstream(t)
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) // whole seconds: 29–30 s ahead
	up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: date, Message: "slow down"})
	gw, rec := newGateway(t, oneSource(up.URL, "CHAT__QUOTA_FULL", "fail_fast"))
	ctx := context.Background()
	for i := range 2 {
		_, err := gw.Chat(ctx, hello())
		var ae *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ae, "call %d", i+1)
		assert.Equal(t, "quota_exhausted", ae.Reason)
		assert.Equal(t, "retry_after", ae.Reasons["a"], "call %d", i+1)
		assert.Greater(t, ae.RetryAfter, 20*time.Second, "call %d: the time left until the date", i+1)
		assert.LessOrEqual(t, ae.RetryAfter, 30*time.Second, "call %d", i+1)
		if i == 0 {
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he, "the 429 is reachable")
			assert.Equal(t, http.StatusTooManyRequests, he.StatusCode)
			assert.Greater(t, he.RetryAfter, 20*time.Second, "the date, as a duration")
		}
	}
	assert.Equal(t, 1, up.Requests(testutil.Chat), "the held-off source was not called again")
	assert.Equal(t, []string{"a:throttle"}, rec.Outcomes())
}
