package pgw_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// soloChat is the env of a one-source CHAT scope at url under
// QUOTA_FULL=fail_fast, with kv as extra keys.
func soloChat(url string, kv ...string) map[string]string {
	env := map[string]string{
		"PGW_SCOPES":            "CHAT",
		"CHAT__SOURCES":         "solo",
		"CHAT__SOLO__BASE_URL":  url,
		"CHAT__SOLO__MODEL":     "m",
		"CHAT__QUOTA_FULL":      "fail_fast",
		"CHAT__POLL_INTERVAL_S": "0.01",
	}
	for i := 0; i < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// Every documented Retry-After form of a 429 — seconds, an HTTP date,
// retry-after-ms — holds the source off for the wait it states, through
// the OpenAI and the Anthropic transports alike; the caller sees that wait
// as the RetryAfter of both the verdict and the 429 behind it, and an
// absurd Retry-After is capped at 24 hours.
func TestEveryRetryAfterFormHoldsTheSourceOffForItsWait(t *testing.T) {
	inNinety := func() http.Header {
		return headers("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))()
	}
	for _, c := range []struct {
		name, provider string
		hdr            func() http.Header
		want           time.Duration
	}{
		{"openai seconds", "openai", headers("Retry-After", "90"), 90 * time.Second},
		{"openai http date", "openai", inNinety, 90 * time.Second},
		{"openai retry-after-ms", "openai", headers("retry-after-ms", "90000"), 90 * time.Second},
		{"azure retry-after-ms", "azure", headers("retry-after-ms", "90000"), 90 * time.Second},
		{"anthropic seconds", "anthropic", headers("retry-after", "90"), 90 * time.Second},
		{"anthropic http date", "anthropic", inNinety, 90 * time.Second},
		{"eleven days are capped", "openai", headers("Retry-After", "950400"), 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests})
			up.SetDefault(testutil.Messages, testutil.Reply{Status: http.StatusTooManyRequests})
			adv := newAdvertiser(t, up, c.hdr)
			gw, _ := newGateway(t, soloChat(adv.URL, "CHAT__SOLO__PROVIDER", c.provider))
			for i := range 2 {
				_, err := gw.Chat(context.Background(), hello())
				var ase *pgw.AllSourcesExhausted
				require.ErrorAs(t, err, &ase, "call %d", i)
				assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
				assert.Equal(t, "retry_after", ase.Reasons["solo"])
				assert.InDelta(t, c.want.Seconds(), ase.RetryAfter.Seconds(), 3, "call %d", i)
				assert.LessOrEqual(t, ase.RetryAfter, 24*time.Hour)
				if i == 0 {
					var he *pgw.HTTPError
					require.ErrorAs(t, err, &he, "the 429 is reachable")
					assert.Equal(t, http.StatusTooManyRequests, he.StatusCode)
					assert.InDelta(t, c.want.Seconds(), he.RetryAfter.Seconds(), 3)
				}
			}
			assert.Equal(t, int64(1), adv.hits.Load(), "the held source was not asked again")
		})
	}
}

// Every answer refreshes the budget, not only a success: a 5xx that says
// the window is spent keeps its source out of the next calls (they go to
// the backup without asking it), and a 429 without Retry-After but with a
// spent window's reset is held to that reset instead of being retried
// after a backoff.
func TestFailedAnswersRefreshTheAdvertisedBudget(t *testing.T) {
	t.Run("503", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
		adv := newAdvertiser(t, up, spentOpenAI("30s"))
		backup := testutil.NewUpstream(t)
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES":              "CHAT",
			"CHAT__SOURCES":           "first,second",
			"CHAT__FIRST__BASE_URL":   adv.URL,
			"CHAT__FIRST__PRIORITY":   "0",
			"CHAT__SECOND__BASE_URL":  backup.URL,
			"CHAT__SECOND__PRIORITY":  "1",
			"CHAT__FAILURE_THRESHOLD": "5",
			"CHAT__POLL_INTERVAL_S":   "0.01",
		})
		for i := range 3 {
			r, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err, "call %d", i)
			assert.Equal(t, "second", r.Source, "call %d", i)
		}
		assert.Equal(t, int64(1), adv.hits.Load(), "the 503's spent budget held the source back")
		assert.Equal(t, []string{"first:failure", "second:success", "second:success", "second:success"}, rec.Outcomes())
		assert.Empty(t, rec.Transitions(), "one failure opened no breaker: the budget held it back")
	})
	t.Run("429 without Retry-After", func(t *testing.T) {
		up := testutil.NewUpstream(t)
		up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests})
		adv := newAdvertiser(t, up, spentOpenAI("40s"))
		gw, _ := newGateway(t, soloChat(adv.URL))
		_, err := gw.Chat(context.Background(), hello())
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.Equal(t, "rate_limited", ase.Reasons["solo"])
		assert.InDelta(t, 40, ase.RetryAfter.Seconds(), 2, "the window's reset is the certain wait")
		assert.Equal(t, int64(1), adv.hits.Load(), "not retried into a second 429")
	})
}

// The reset forms of the real world, as a caller sees them in the
// verdict's RetryAfter and in Snapshot: a Unix time in seconds or in
// milliseconds is that instant, a reset hours ahead is clamped to 15
// minutes, a reset in the past (clock skew) holds the figures one second,
// and comma-formatted numbers are read.
func TestAdvertisedResetFormsAsACallerSeesThem(t *testing.T) {
	for _, c := range []struct {
		name       string
		limit      string
		reset      func() string
		want, diff float64
	}{
		{"unix seconds", "60", func() string { return strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10) }, 50, 2},
		{"unix milliseconds", "60", func() string { return strconv.FormatInt(time.Now().Add(50*time.Second).UnixMilli(), 10) }, 50, 2},
		{"two hours ahead", "60", func() string { return "2h0m0s" }, 15 * 60, 2},
		{"in the past", "60", func() string { return strconv.FormatInt(time.Now().Add(-50*time.Second).Unix(), 10) }, 0.5, 0.5},
		{"commas", "1,500", func() string { return "1m0s" }, 60, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			adv := newAdvertiser(t, up, func() http.Header {
				return headers("x-ratelimit-limit-requests", c.limit, "x-ratelimit-remaining-requests", "0",
					"x-ratelimit-reset-requests", c.reset())()
			})
			gw, _ := newGateway(t, soloChat(adv.URL))
			ctx := context.Background()
			_, err := gw.Chat(ctx, hello())
			require.NoError(t, err)
			_, err = gw.Chat(ctx, hello())
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase)
			assert.Equal(t, "rate_limited", ase.Reasons["solo"])
			assert.InDelta(t, c.want, ase.RetryAfter.Seconds(), c.diff)
			snap, err := gw.Snapshot(ctx, "CHAT", "solo")
			require.NoError(t, err)
			require.NotNil(t, snap.Advertised)
			want, _ := strconv.ParseInt(strings.ReplaceAll(c.limit, ",", ""), 10, 64)
			assert.Equal(t, want, snap.Advertised.Requests.Limit)
			assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
			assert.Equal(t, int64(1), adv.hits.Load())
		})
	}
}

// A spent window whose reset is in the past holds its source one second,
// not for good: under QUOTA_FULL=wait each call waits that second out and
// is answered.
func TestASpentWindowWithAPastResetHoldsOnlyASecond(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, func() http.Header {
		return headers("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", time.Now().Add(-30*time.Second).UTC().Format(time.RFC3339))()
	})
	gw, _ := newGateway(t, soloChat(adv.URL, "CHAT__SOLO__PROVIDER", "anthropic", "CHAT__QUOTA_FULL", "wait"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, err, "call %d", i)
	}
	assert.Equal(t, int64(3), adv.hits.Load())
}

// An Anthropic answer without the combined tokens window: a call's token
// estimate (prompt and answer bound) is reserved against the tighter of the
// input- and output-token windows, and Snapshot shows that window.
func TestAnthropicWithoutACombinedWindowReservesAgainstTheTighterOne(t *testing.T) {
	up := testutil.NewUpstream(t)
	reset := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	adv := newAdvertiser(t, up, headers(
		"anthropic-ratelimit-requests-limit", "1000", "anthropic-ratelimit-requests-remaining", "999",
		"anthropic-ratelimit-requests-reset", reset,
		"anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-input-tokens-remaining", "80000",
		"anthropic-ratelimit-input-tokens-reset", reset,
		"anthropic-ratelimit-output-tokens-limit", "16000", "anthropic-ratelimit-output-tokens-remaining", "1000",
		"anthropic-ratelimit-output-tokens-reset", reset,
	))
	gw, _ := newGateway(t, soloChat(adv.URL, "CHAT__SOLO__PROVIDER", "anthropic"))
	req := hello()
	req.MaxTokens = 4000
	ctx := context.Background()
	_, err := gw.Chat(ctx, req)
	require.NoError(t, err)

	_, err = gw.Chat(ctx, req)
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, "~4,000 estimated tokens do not fit the 1,000 output tokens left")
	assert.Equal(t, "rate_limited", ase.Reasons["solo"])
	assert.InDelta(t, 60, ase.RetryAfter.Seconds(), 3)
	assert.Equal(t, int64(1), adv.hits.Load())

	req.MaxTokens = 500
	_, err = gw.Chat(ctx, req)
	require.NoError(t, err, "a call that fits the tighter window runs")
	snap, err := gw.Snapshot(ctx, "CHAT", "solo")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised)
	assert.Equal(t, int64(16000), snap.Advertised.Tokens.Limit, "the output window, the tighter one")
}

// A Gemini 429 on a per-day quota holds its source until the quota resets
// at midnight Pacific time, not for the body's short retry delay.
func TestGeminiPerDayQuotaHoldsTheSourceToMidnightPacific(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	body := strings.Replace(gemini429, "PerMinute", "PerDay", 1)
	gem := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(gem.Close)
	gw, _ := newGateway(t, soloChat(gem.URL+"/v1beta/openai"))
	_, err = gw.Chat(context.Background(), hello())
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	assert.Equal(t, "retry_after", ase.Reasons["solo"])
	now := time.Now().In(loc)
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, loc)
	assert.InDelta(t, time.Until(midnight).Seconds(), ase.RetryAfter.Seconds(), 5)
}

// Groq's requests limit counts per day: through the gateway it is never
// compared with RPM (no log), while its per-minute tokens limit is, once
// per source; an OpenAI-compatible host other than Groq's has its requests
// limit compared.
func TestGroqsDailyRequestsLimitIsNeverComparedWithRPM(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, headers(
		"x-ratelimit-limit-requests", "14400", "x-ratelimit-remaining-requests", "14370", "x-ratelimit-reset-requests", "2m59.56s",
		"x-ratelimit-limit-tokens", "18000", "x-ratelimit-remaining-tokens", "17997", "x-ratelimit-reset-tokens", "7.66s"))
	addr := strings.TrimPrefix(strings.TrimSuffix(adv.URL, "/v1"), "http://")
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr) // every host is the fake upstream
	}}
	t.Cleanup(tr.CloseIdleConnections)
	const msg = "pgw: the upstream advertises other rate limits than configured"
	for _, c := range []struct {
		host, tpm string
		logs      int
	}{
		{"api.groq.com", "18000", 0},
		{"api.groq.com", "6000", 1},
		{"llm.example.com", "18000", 1},
	} {
		h := &countingHandler{counts: map[slog.Level]map[string]int{}}
		gw, _ := newGateway(t, soloChat("http://"+c.host+"/v1", "CHAT__SOLO__RPM", "30", "CHAT__SOLO__TPM", c.tpm),
			pgw.WithHTTPClient(&http.Client{Transport: tr}), pgw.WithLogger(slog.New(h)))
		for i := range 3 {
			_, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err, "%s call %d", c.host, i)
		}
		assert.Equal(t, c.logs, h.count(slog.LevelInfo, msg), "%s with TPM %s", c.host, c.tpm)
	}
}

// LIMITS_FROM_HEADERS replaces the configured TPM too: a call whose
// estimate is larger than the whole configured TPM can never be admitted
// by it, yet runs once the advertised tokens window stands in its place.
func TestLimitsFromHeadersReplaceTheConfiguredTPM(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, headers("x-ratelimit-limit-tokens", "100000", "x-ratelimit-remaining-tokens", "90000",
		"x-ratelimit-reset-tokens", "30s"))
	for _, lfh := range []string{"false", "true"} {
		gw, _ := newGateway(t, soloChat(adv.URL, "CHAT__SOLO__TPM", "50", "CHAT__SOLO__LIMITS_FROM_HEADERS", lfh))
		req := hello()
		req.MaxTokens = 100
		for i := range 2 {
			_, err := gw.Chat(context.Background(), req)
			if lfh == "true" {
				assert.NoError(t, err, "call %d: the advertised 90,000 tokens replace TPM 50", i)
			} else {
				assert.Error(t, err, "call %d: ~104 estimated tokens never fit TPM 50", i)
			}
		}
	}
	assert.Equal(t, int64(2), adv.hits.Load())
}
