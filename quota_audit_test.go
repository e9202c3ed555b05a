package pgw_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
)

// scriptedUpstream is an OpenAI-compatible chat upstream that answers each
// request with the next scripted answer (then 200 with the default usage):
// a status, and for a 200 the total_tokens its usage reports (< 0: no usage
// object at all).
type scriptedUpstream struct {
	URL  string
	hits atomic.Int64
	mu   sync.Mutex
	next []scripted
}

type scripted struct {
	status int
	tokens int
}

func newScriptedUpstream(t *testing.T) *scriptedUpstream {
	t.Helper()
	u := &scriptedUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.hits.Add(1)
		a := scripted{status: http.StatusOK, tokens: 2}
		u.mu.Lock()
		if len(u.next) > 0 {
			a, u.next = u.next[0], u.next[1:]
		}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if a.status != http.StatusOK {
			w.WriteHeader(a.status)
			_, _ = io.WriteString(w, `{"error":{"message":"no","type":"server_error"}}`)
			return
		}
		usage := ""
		if a.tokens >= 0 {
			usage = fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"completion_tokens":0,"total_tokens":%d}`, a.tokens, a.tokens)
		}
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]`+usage+`}`)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/v1"
	return u
}

// script queues answers for the next requests.
func (u *scriptedUpstream) script(as ...scripted) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.next = append(u.next, as...)
}

// estimated is a chat request that reserves exactly n tokens.
func estimated(n int) pgw.ChatRequest {
	req := hello()
	req.EstTokens = n
	return req
}

// refusedByQuota asserts that err is the fail_fast quota refusal of the one
// source "solo" and returns its RetryAfter.
func refusedByQuota(t *testing.T, err error, msg string) time.Duration {
	t.Helper()
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase, msg)
	assert.Equal(t, "quota_exhausted", ase.Reason, msg)
	assert.Equal(t, map[string]string{"solo": "rate_limited"}, ase.Reasons, msg)
	return ase.RetryAfter
}

// within asserts hi-slack < got ≤ hi: a refill wait measured a little after
// the admissions it counts from (slack covers the calls' own run time, on a
// loaded machine), never longer than the exact wait from the first of them.
func within(t *testing.T, got, hi, slack time.Duration, msg string) {
	t.Helper()
	assert.LessOrEqual(t, got, hi, msg)
	assert.Greater(t, got, hi-slack, msg)
}

// RPM is a bucket holding one minute's allowance: from a standing start the
// whole minute is admitted at once, the next request is refused — never sent
// — and its RetryAfter is the time the bucket needs to refill one request
// (60 s / RPM).
func TestRPMAdmitsTheMinutesBurstThenRefusesWithTheRefillWait(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__RPM": "5", "GEN__QUOTA_FULL": "fail_fast",
	})
	var sent atomic.Int64
	fn := func(context.Context, pgw.Source) (int, pgw.Usage, error) { sent.Add(1); return 1, pgw.Usage{}, nil }
	ctx := context.Background()
	for i := range 5 {
		_, err := pgw.Call(ctx, gw, "GEN", fn)
		require.NoError(t, err, "call %d of the minute's 5", i)
	}
	_, err := pgw.Call(ctx, gw, "GEN", fn)
	within(t, refusedByQuota(t, err, "the 6th call of the minute"), 12*time.Second, 5*time.Second, "one request refills in 60 s / 5")
	assert.Equal(t, int64(5), sent.Load(), "the refused call was never run")
}

// TPM: the chat's token estimate is reserved before the attempt and settled
// to the usage the upstream reports — a refund when it used fewer, a debit
// when it used more — and a refusal's RetryAfter is the refill time of the
// excess.
func TestTPMSettlesEachEstimateToTheReportedUsage(t *testing.T) {
	u := newScriptedUpstream(t)
	gw, _ := newGateway(t, soloChat(u.URL, "CHAT__SOLO__TPM", "1000")) // 1000 tokens a minute: 60 ms a token
	ctx := context.Background()

	u.script(scripted{status: 200, tokens: 100})
	_, err := gw.Chat(ctx, estimated(600))
	require.NoError(t, err)
	u.script(scripted{status: 200, tokens: 900})
	_, err = gw.Chat(ctx, estimated(900))
	require.NoError(t, err, "600 reserved, 100 used: the refund leaves room for 900")

	_, err = gw.Chat(ctx, estimated(300))
	within(t, refusedByQuota(t, err, "the minute's 1000 tokens are used"), 18*time.Second, 5*time.Second,
		"300 tokens refill in 18 s")

	// A debit: 100 reserved, 700 used.
	u2 := newScriptedUpstream(t)
	gw2, _ := newGateway(t, soloChat(u2.URL, "CHAT__SOLO__TPM", "1000"))
	u2.script(scripted{status: 200, tokens: 700})
	_, err = gw2.Chat(ctx, estimated(100))
	require.NoError(t, err)
	_, err = gw2.Chat(ctx, estimated(400))
	within(t, refusedByQuota(t, err, "700 used of 1000, 400 asked"), 6*time.Second, 5*time.Second,
		"the 100 tokens over the minute refill in 6 s")
	assert.Equal(t, int64(2), u.hits.Load(), "no refused call reached the upstream")
	assert.Equal(t, int64(1), u2.hits.Load(), "no refused call reached the upstream")
}

// An answer that reports no usage leaves the estimate charged: it is all
// the gateway knows the call cost.
func TestAnAnswerWithoutUsageKeepsItsEstimateCharged(t *testing.T) {
	u := newScriptedUpstream(t)
	gw, _ := newGateway(t, soloChat(u.URL, "CHAT__SOLO__TPM", "1000"))
	u.script(scripted{status: 200, tokens: -1})
	_, err := gw.Chat(context.Background(), estimated(600))
	require.NoError(t, err)
	_, err = gw.Chat(context.Background(), estimated(600))
	within(t, refusedByQuota(t, err, "600 charged, 600 asked"), 12*time.Second, 5*time.Second,
		"the 200 tokens over the minute refill in 12 s")
}

// A failed attempt — a 5xx or a 429 without Retry-After — is charged no
// tokens: its reservation is refunded before the next attempt, so every
// retry of a call that reserves the whole minute's TPM is admitted, and so is
// the next call.
func TestAFailedAttemptsTokenReservationIsRefunded(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			u := newScriptedUpstream(t)
			gw, _ := newGateway(t, soloChat(u.URL, "CHAT__SOLO__TPM", "1000", "CHAT__MAX_ATTEMPTS", "3"))
			u.script(scripted{status: status}, scripted{status: status}, scripted{status: status})
			_, err := gw.Chat(context.Background(), estimated(1000))
			var gue *pgw.GatewayUnavailableError
			require.ErrorAs(t, err, &gue, "three failed attempts, each admitted")
			assert.Equal(t, int64(3), u.hits.Load())
			u.script(scripted{status: 200, tokens: 1000})
			_, err = gw.Chat(context.Background(), estimated(1000))
			require.NoError(t, err, "nothing was charged for the failed attempts")
		})
	}
}

// Call reserves no estimate; the Usage its function returns is charged to
// TPM afterwards. A charge above the minute's allowance overdraws the
// bucket, which then refuses even a call that reserves nothing until the
// overdraft has refilled.
func TestCallChargesTheUsageItsFunctionReports(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__TPM": "1000", "GEN__QUOTA_FULL": "fail_fast",
	})
	ctx := context.Background()
	used := func(n int) func(context.Context, pgw.Source) (int, pgw.Usage, error) {
		return func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{TotalTokens: n}, nil }
	}
	_, err := pgw.Call(ctx, gw, "GEN", used(1000))
	require.NoError(t, err)
	_, err = pgw.Call(ctx, gw, "GEN", used(500))
	require.NoError(t, err, "a full bucket still admits a call that reserves nothing")
	_, err = pgw.Call(ctx, gw, "GEN", used(0))
	within(t, refusedByQuota(t, err, "1500 charged to a 1000 bucket"), 30*time.Second, 5*time.Second,
		"the 500-token overdraft refills in 30 s")
}

// MAX_IN_FLIGHT: that many attempts run at once; one more is refused with no
// certain wait (RetryAfter 0: a slot frees when a call ends, not at a known
// time), and a call that ends gives its slot back.
func TestMaxInFlightRefusesTheNextWithNoCertainWaitAndFreesOnReturn(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__MAX_IN_FLIGHT": "2", "GEN__QUOTA_FULL": "fail_fast",
	})
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	held := func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done(): // Close, should the test fail first
		}
		return 1, pgw.Usage{}, nil
	}
	done := make(chan error, 2)
	for range 2 {
		go func() { _, err := pgw.Call(ctx, gw, "GEN", held); done <- err }()
		<-entered
	}
	quick := func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil }
	_, err := pgw.Call(ctx, gw, "GEN", quick)
	assert.Equal(t, time.Duration(0), refusedByQuota(t, err, "both slots are held"))
	release <- struct{}{}
	require.NoError(t, <-done)
	_, err = pgw.Call(ctx, gw, "GEN", quick)
	require.NoError(t, err, "the ended call gave its slot back")
	release <- struct{}{}
	require.NoError(t, <-done)
}

// Under QUOTA_FULL=wait a call refused by RPM sleeps to the refill and then
// runs: it neither fails nor spins.
func TestQuotaFullWaitSleepsToTheRefillThenRuns(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__RPM": "120", "GEN__QUOTA_FULL": "wait",
		"GEN__POLL_INTERVAL_S": "0.01",
	}) // 120 a minute: one refills every 500 ms
	ctx := context.Background()
	var sent atomic.Int64
	fn := func(context.Context, pgw.Source) (int, pgw.Usage, error) { sent.Add(1); return 1, pgw.Usage{}, nil }
	start := time.Now()
	for i := range 121 {
		_, err := pgw.Call(ctx, gw, "GEN", fn)
		require.NoError(t, err, "call %d", i)
	}
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "the 121st waited for its refill")
	assert.Equal(t, int64(121), sent.Load())
}

// Bad quota values are refused by the configuration, naming the key, the
// value and what is legal, at the documented bounds.
func TestQuotaKeysAreRefusedOutsideTheirDocumentedBounds(t *testing.T) {
	base := func(kv ...string) map[string]string {
		env := map[string]string{"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo"}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	for key, vals := range map[string]struct{ good, bad []string }{
		"GEN__SOLO__RPM": {
			good: []string{"0", "1", "18764998", "18765000", "2147483000"},
			bad:  []string{"-1", "18764999", "2147483001", "2147484000", "1.5", "ten", ""},
		},
		"GEN__SOLO__TPM": {
			good: []string{"0", "150000000", "2147483000"},
			bad:  []string{"-5", "150000001", "2147484000"},
		},
		"GEN__SOLO__MAX_IN_FLIGHT": {
			good: []string{"0", "1", "16777216"},
			bad:  []string{"-1", "16777217", "2.5"},
		},
	} {
		for _, v := range vals.good {
			_, err := config.FromMap(base(key, v))
			assert.NoError(t, err, "%s=%q", key, v)
		}
		for _, v := range vals.bad {
			_, err := config.FromMap(base(key, v))
			var ce *pgw.ConfigError
			if !assert.True(t, errors.As(err, &ce), "%s=%q: %v", key, v, err) {
				continue
			}
			require.Len(t, ce.Problems, 1, "%s=%q", key, v)
			assert.Equal(t, key, ce.Problems[0].Key, "%s=%q", key, v)
			assert.NotEmpty(t, ce.Problems[0].Legal, "%s=%q", key, v)
		}
	}
}

// A request whose estimate is larger than a source's whole TPM can never be
// admitted by it, however long it waits: that source is passed over (the
// call fails over), and when no source can take the request the call fails
// at once — under QUOTA_FULL=wait too — with an error that is a
// *gate.TokensError naming the estimate and the TPM, nothing sent.
func TestAnEstimateLargerThanTheWholeTPMIsNeverWaitedFor(t *testing.T) {
	u := newScriptedUpstream(t)
	for _, mode := range []string{"fail_fast", "wait"} {
		gw, _ := newGateway(t, soloChat(u.URL, "CHAT__SOLO__TPM", "100", "CHAT__QUOTA_FULL", mode))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := gw.Chat(ctx, estimated(500))
		cancel()
		var te *gate.TokensError
		require.ErrorAs(t, err, &te, mode)
		assert.Equal(t, int64(500), te.Tokens, mode)
		assert.Equal(t, 100, te.TPM, mode)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "%s: failed at once, not at the deadline", mode)
	}
	assert.Equal(t, int64(0), u.hits.Load(), "nothing was sent")

	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES": "small,big", "CHAT__QUOTA_FULL": "wait",
		"CHAT__SMALL__BASE_URL": u.URL, "CHAT__SMALL__TPM": "100",
		"CHAT__BIG__BASE_URL": u.URL, "CHAT__BIG__TPM": "1000", "CHAT__BIG__PRIORITY": "1",
	})
	resp, err := gw.Chat(context.Background(), estimated(500))
	require.NoError(t, err)
	assert.Equal(t, "big", resp.Source, "the source whose TPM can take it serves it")
}

// rejections is an observer keeping the rejections it is told of.
type rejections struct {
	mu  sync.Mutex
	got []pgw.Rejection
}

func (r *rejections) ObserveAttempt(pgw.AttemptRecord)   {}
func (r *rejections) ObserveStateChange(pgw.StateChange) {}
func (r *rejections) ObserveRejection(e pgw.Rejection) {
	r.mu.Lock()
	r.got = append(r.got, e)
	r.mu.Unlock()
}
func (r *rejections) all() []pgw.Rejection {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.Rejection(nil), r.got...)
}

// An observer of rejections is told which quota limit refused a source —
// "rpm", "tpm" or "in_flight" — with the same RetryAfter the caller gets.
func TestObservedQuotaRejectionsNameTheLimitThatRefused(t *testing.T) {
	for _, c := range []struct {
		key, limit string
		fn         func(context.Context, pgw.Source) (int, pgw.Usage, error)
	}{
		{"RPM", "rpm", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil }},
		{"TPM", "tpm", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{TotalTokens: 2}, nil }},
	} {
		t.Run(c.limit, func(t *testing.T) {
			obs := &rejections{}
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__" + c.key: "1", "GEN__QUOTA_FULL": "fail_fast",
			}, pgw.WithObserver(obs))
			_, err := pgw.Call(context.Background(), gw, "GEN", c.fn)
			require.NoError(t, err)
			_, err = pgw.Call(context.Background(), gw, "GEN", c.fn)
			ra := refusedByQuota(t, err, "the minute's one is used")
			require.Len(t, obs.all(), 1)
			e := obs.all()[0]
			assert.Equal(t, "solo", e.Source)
			assert.Equal(t, "rate_limited", e.Reason)
			assert.Equal(t, c.limit, e.Limit)
			assert.Equal(t, ra, e.RetryAfter, "the caller's RetryAfter")
		})
	}
	t.Run("in_flight", func(t *testing.T) {
		obs := &rejections{}
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES": "GEN", "GEN__SOURCES": "solo", "GEN__SOLO__MAX_IN_FLIGHT": "1", "GEN__QUOTA_FULL": "fail_fast",
		}, pgw.WithObserver(obs))
		_, err := pgw.Call(context.Background(), gw, "GEN", func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
			_, err := pgw.Call(ctx, gw, "GEN", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 1, pgw.Usage{}, nil })
			assert.Equal(t, time.Duration(0), refusedByQuota(t, err, "the outer call holds the one slot"))
			return 1, pgw.Usage{}, nil
		})
		require.NoError(t, err)
		require.Len(t, obs.all(), 1)
		assert.Equal(t, "in_flight", obs.all()[0].Limit)
		assert.Equal(t, time.Duration(0), obs.all()[0].RetryAfter)
	})
}
