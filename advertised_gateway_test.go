package pgw_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// advertiser stands in front of a fake upstream and adds the rate-limit
// headers its current script says to every answer; it counts the requests
// that reached it.
type advertiser struct {
	URL  string
	hits atomic.Int64
	mu   sync.Mutex
	hdr  func() http.Header
}

func newAdvertiser(t *testing.T, up *testutil.Upstream, hdr func() http.Header) *advertiser {
	t.Helper()
	target, err := url.Parse(strings.TrimSuffix(up.URL, "/v1"))
	require.NoError(t, err)
	a := &advertiser{hdr: hdr}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A transport of its own: http.DefaultTransport is shared with every
	// test's httptest servers, whose Close closes its idle connections at
	// moments this proxy does not choose.
	tr := &http.Transport{}
	proxy.Transport = tr
	t.Cleanup(tr.CloseIdleConnections)
	proxy.ModifyResponse = func(r *http.Response) error {
		a.mu.Lock()
		h := a.hdr()
		a.mu.Unlock()
		for k, vs := range h {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.hits.Add(1)
		// The request is read in full before it is forwarded. Streamed,
		// the proxy's transport would still read the inbound body (the
		// read past its length that checks for extra bytes) when the
		// upstream's answer comes back and is written out; an HTTP/1
		// server does not let a handler read its request body once the
		// response has begun, and the failed read can cut the forwarded
		// exchange short, on a loaded machine at random.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL + "/v1"
	return a
}

func (a *advertiser) set(hdr func() http.Header) {
	a.mu.Lock()
	a.hdr = hdr
	a.mu.Unlock()
}

func headers(kv ...string) func() http.Header {
	return func() http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
}

// spentOpenAI says the request window is spent and resets in reset.
func spentOpenAI(reset string) func() http.Header {
	return headers("x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0",
		"x-ratelimit-reset-requests", reset)
}

// A source whose advertised budget is spent is not sent to: the call goes
// to the next source at once, and the spent one is not asked again.
func TestSpentAdvertisedBudgetFailsOverToTheNextSource(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("30s"))
	gw, rec := newGateway(t, map[string]string{
		"CHAT__SOURCES":              "first,second",
		"CHAT__FIRST__BASE_URL":      adv.URL,
		"CHAT__FIRST__PRIORITY":      "0",
		"CHAT__SECOND__BASE_URL":     up.URL,
		"CHAT__SECOND__PRIORITY":     "1",
		"CHAT__POLL_INTERVAL_S":      "0.01",
		"CHAT__STALL_WINDOW_S":       "5",
		"CHAT__FIRST__MAX_IN_FLIGHT": "4",
	})
	ctx := context.Background()
	for i := range 3 {
		r, err := gw.Chat(ctx, hello())
		require.NoError(t, err, "call %d", i)
		want := "second"
		if i == 0 {
			want = "first"
		}
		assert.Equal(t, want, r.Source, "call %d", i)
	}
	assert.Equal(t, int64(1), adv.hits.Load(), "the spent source was asked once, before anything was known")
	assert.Equal(t, []string{"first:success", "second:success", "second:success"}, rec.Outcomes())
}

// The tokens window counts as the requests window does: with tokens spent
// and requests left, the source is held back until the tokens reset.
func TestSpentAdvertisedTokensHoldTheSourceBack(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, headers(
		"x-ratelimit-limit-requests", "5000", "x-ratelimit-remaining-requests", "4999",
		"x-ratelimit-reset-requests", "12ms",
		"x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-tokens", "0",
		"x-ratelimit-reset-tokens", "6m0s"))
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  adv.URL,
		"CHAT__QUOTA_FULL":      "fail_fast",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	ctx := context.Background()
	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	_, err = gw.Chat(ctx, hello())
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.Equal(t, "rate_limited", ase.Reasons["solo"])
	assert.InDelta(t, 360, ase.RetryAfter.Seconds(), 2, "the tokens' reset, 6m0s")
	assert.Equal(t, int64(1), adv.hits.Load())
}

// A wait for an advertised reset that ends after the caller's deadline
// ends at once with fail_fast's error and the reset as its RetryAfter, for
// OpenAI's duration resets and Anthropic's RFC 3339 ones alike.
func TestAdvertisedResetPastTheDeadlineFailsAtOnce(t *testing.T) {
	for _, c := range []struct {
		name, provider string
		hdr            func() http.Header
	}{
		{"openai", "openai", spentOpenAI("1m0s")},
		{"anthropic", "anthropic", func() http.Header {
			reset := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			return headers(
				"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0",
				"anthropic-ratelimit-requests-reset", reset,
				"anthropic-ratelimit-tokens-limit", "40000", "anthropic-ratelimit-tokens-remaining", "39000",
				"anthropic-ratelimit-tokens-reset", reset)()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			adv := newAdvertiser(t, up, c.hdr)
			gw, _ := newGateway(t, map[string]string{
				"CHAT__SOURCES":         "solo",
				"CHAT__SOLO__BASE_URL":  adv.URL,
				"CHAT__SOLO__PROVIDER":  c.provider,
				"CHAT__SOLO__MODEL":     "m",
				"CHAT__QUOTA_FULL":      "wait",
				"CHAT__POLL_INTERVAL_S": "0.01",
			})
			_, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = gw.Chat(ctx, hello())
			require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
			assert.False(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
			assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 2)
			assert.Equal(t, int64(1), adv.hits.Load())
		})
	}
}

// Under QUOTA_FULL=wait a call held back by a spent advertised budget waits
// for the reset and then runs; it is not refused, and nothing is sent
// before the reset.
func TestAdvertisedBudgetResumesAfterTheReset(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("300ms"))
	gw, rec := newGateway(t, map[string]string{
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  adv.URL,
		"CHAT__QUOTA_FULL":      "wait",
		"CHAT__POLL_INTERVAL_S": "0.01",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	adv.set(headers("x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "58",
		"x-ratelimit-reset-requests", "1s"))
	r, err := gw.Chat(ctx, hello())
	require.NoError(t, err, "the wait ended at the reset")
	assert.Equal(t, "solo", r.Source)
	assert.Equal(t, int64(2), adv.hits.Load())
	assert.Equal(t, []string{"solo:success", "solo:success"}, rec.Outcomes())
}

// Two gateways on one Redis share the advertised budget: what one heard
// from the upstream, the other obeys before sending anything.
func TestRedisAdvertisedBudgetIsSharedBetweenGateways(t *testing.T) {
	srv := testutil.StartRedis(t)
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("45s"))
	env := map[string]string{
		"PGW_BREAKER_BACKEND":   "redis",
		"PGW_REDIS_URL":         "redis://" + srv.Addr + "/0",
		"PGW_REDIS_PREFIX":      "pgw-test-" + t.Name(),
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  adv.URL,
		"CHAT__QUOTA_FULL":      "fail_fast",
		"CHAT__POLL_INTERVAL_S": "0.01",
	}
	gw1, _ := newGateway(t, env)
	gw2, rec2 := newGateway(t, env)
	ctx := context.Background()
	_, err := gw1.Chat(ctx, hello())
	require.NoError(t, err)

	_, err = gw2.Chat(ctx, hello())
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "the other gateway sees the budget spent")
	assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
	assert.InDelta(t, 45, ase.RetryAfter.Seconds(), 2)
	assert.Equal(t, int64(1), adv.hits.Load(), "the second gateway did not call the upstream")
	assert.Empty(t, rec2.Attempts())

	snap, err := gw2.Snapshot(ctx, "CHAT", "solo")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised)
	assert.Equal(t, int64(60), snap.Advertised.Requests.Limit)
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
}

// The governed HTTPClient reads the rate-limit headers of the answers it
// carries, plain and streamed: once the budget is spent the next request
// gets pgw's verdict and the upstream is not called.
func TestHTTPClientAnswersFeedTheAdvertisedBudget(t *testing.T) {
	for _, stream := range []bool{false, true} {
		up := testutil.NewUpstream(t)
		adv := newAdvertiser(t, up, spentOpenAI("40s"))
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":            "CHAT",
			"CHAT__SOURCES":         "solo",
			"CHAT__SOLO__BASE_URL":  adv.URL,
			"CHAT__QUOTA_FULL":      "fail_fast",
			"CHAT__POLL_INTERVAL_S": "0.01",
		})
		hc := gw.HTTPClient("CHAT")
		resp := post(t, hc, "chat/completions", chatBody(stream))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		readBody(t, resp)
		resp = post(t, hc, "chat/completions", chatBody(stream))
		body := readBody(t, resp)
		assert.Equal(t, http.StatusFailedDependency, resp.StatusCode, "stream %v: %s", stream, body)
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "stream %v", stream)
		assert.InDelta(t, 40, ra, 2, "stream %v", stream)
		assert.Equal(t, int64(1), adv.hits.Load(), "stream %v", stream)
	}
}
