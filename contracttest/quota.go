package contracttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// QuotaFactory builds a fresh quota gate enforcing limits (keyed by source
// name) and returns it with the Clock that drives its time, as BreakerFactory
// does. RunQuota calls it once per subtest, possibly from parallel subtests,
// so it must be safe to call concurrently. Source names are unique per
// subtest and per RunQuota call, so gates built on a shared store do not see
// each other's accounts.
type QuotaFactory func(t *testing.T, limits map[string]gate.Limits) (gate.QuotaGate, Clock)

// Limits every case builds on. On real time the RPM and TPM allowances refill
// one request and 2 000 tokens every 200ms, far above a Slack of tens of
// milliseconds, while a minute's allowance (300 requests, one 600 000-token
// call) is quick to spend.
const (
	qRPM      = 300                          // one request per qInterval
	qTPM      = 600_000                      // 10 tokens per ms
	qInterval = time.Minute / qRPM           // 200ms
	qTokens   = qTPM / 300                   // tokens that refill in qInterval: 2 000
	qPerMilli = qTPM / 60_000                // 10
	qSlowRPM  = 2                            // one request per 30s: never refills within a case
	qSlowWait = time.Minute / qSlowRPM       // 30s
	qTPMWait  = time.Minute * qTokens / qTPM // 200ms, the refill time of qTokens
	// qBig tokens refill in 6s, never within a case: a request of qBig
	// probes "the bucket is (still) full" without racing real time.
	qBig     = qTPM / 10
	qBigWait = 6 * time.Second

	// Limits that do not divide a minute into whole µs, so that RetryAfter
	// must round, and up.
	qOddRPM    = 270       // one request per 222 222.2…µs
	qOddTPM    = 1_234_567 // one token per 48.6…µs
	qOddTokens = 5_000     // refill in 243 000.2…µs
)

// quotaCase is one named subtest of RunQuota; limits returns the limits of
// the harness's source (h.src), other lists extra sources by suffix.
type quotaCase struct {
	name   string
	limits gate.Limits
	other  map[string]gate.Limits
	run    func(h *quotaHarness)
}

// RunQuota runs the quota contract of SPEC §5 and gate.QuotaGate against the
// gates newGate builds: RPM and TPM exact at their boundaries and refilling
// continuously, RetryAfter exact (a retry at RetryAfter is admitted, one
// clearly earlier is not), Settle refunds and debits, MaxInFlight with
// RetryAfter 0, Release freeing exactly one slot however often it is called,
// all-or-nothing rejections, unlimited sources, bad token counts, and
// concurrent callers never exceeding a limit.
//
// Lease expiry of a permit never released is backend-specific (the Redis
// gate's leases expire, the memory gate's do not) and is not part of the
// suite. Subtests run in parallel and RunQuota returns when all are done.
// Durations are compared within clk.Slack(); a run on real time takes a few
// seconds.
func RunQuota(t *testing.T, newGate QuotaFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("q%x%x", time.Now().UnixNano()&0xffffff, run)
	var cases []quotaCase
	cases = append(cases, quotaRateCases()...)
	cases = append(cases, quotaSettleCases()...)
	cases = append(cases, quotaInFlightCases()...)
	cases = append(cases, quotaConcurrencyCases()...)

	t.Run("Quota", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				src := sourceName(nonce, c.name, "")
				limits := map[string]gate.Limits{src: c.limits}
				for suffix, l := range c.other {
					limits[src+"-"+suffix] = l
				}
				for name, l := range limits {
					require.NoError(t, l.Validate(name), "contract suite built invalid limits")
				}
				g, clk := newGate(t, limits)
				require.NotNil(t, g, "factory returned a nil gate")
				require.NotNil(t, clk, "factory returned a nil clock")
				c.run(&quotaHarness{t: t, g: g, clk: clk, src: src})
			})
		}
	})
}

// quotaHarness holds one subtest's gate, clock and source and wraps the
// port's calls so that every error fails the subtest at once.
type quotaHarness struct {
	t   *testing.T
	g   gate.QuotaGate
	clk Clock
	src string
}

// other returns the name of the extra source with suffix.
func (h *quotaHarness) other(suffix string) string { return h.src + "-" + suffix }

func (h *quotaHarness) acquire(est int64) (gate.Permit, gate.QuotaDecision) {
	return h.acquireOn(h.src, est)
}

func (h *quotaHarness) acquireOn(src string, est int64) (gate.Permit, gate.QuotaDecision) {
	h.t.Helper()
	p, d, err := h.g.Acquire(h.t.Context(), src, est)
	require.NoError(h.t, err, "Acquire(%q, %d)", src, est)
	assert.GreaterOrEqual(h.t, d.RetryAfter, time.Duration(0), "Acquire(%q): RetryAfter is never negative", src)
	if d.Allowed {
		assert.Equal(h.t, time.Duration(0), d.RetryAfter, "Acquire(%q) allowed: RetryAfter", src)
		assert.Empty(h.t, d.Limit, "Acquire(%q) allowed: Limit", src)
		assert.Equal(h.t, src, p.Source, "Acquire(%q) allowed: Permit.Source", src)
		assert.Equal(h.t, est, p.Tokens, "Acquire(%q) allowed: Permit.Tokens", src)
	}
	return p, d
}

// granted acquires and requires a grant.
func (h *quotaHarness) granted(est int64) gate.Permit { return h.grantedOn(h.src, est) }

func (h *quotaHarness) grantedOn(src string, est int64) gate.Permit {
	h.t.Helper()
	p, d := h.acquireOn(src, est)
	require.True(h.t, d.Allowed, "Acquire(%q, %d) must be granted: %+v", src, est, d)
	return p
}

// rejected acquires and requires a rejection by limit.
func (h *quotaHarness) rejected(est int64, limit string) gate.QuotaDecision {
	h.t.Helper()
	_, d := h.acquire(est)
	require.False(h.t, d.Allowed, "Acquire(%d) must be rejected by %s", est, limit)
	assert.Equal(h.t, limit, d.Limit, "Acquire(%d): rejecting limit", est)
	return d
}

func (h *quotaHarness) settle(p gate.Permit, actual int64) {
	h.t.Helper()
	require.NoError(h.t, h.g.Settle(h.t.Context(), p, actual), "Settle(%+v, %d)", p, actual)
}

func (h *quotaHarness) release(p gate.Permit) {
	h.t.Helper()
	require.NoError(h.t, h.g.Release(h.t.Context(), p), "Release(%+v)", p)
}

// near asserts got = want within the clock's Slack (exactly on a fake clock).
func (h *quotaHarness) near(want, got time.Duration, what string) {
	h.t.Helper()
	want = max(want, 0)
	if slack := h.clk.Slack(); slack > 0 {
		assert.InDelta(h.t, float64(want), float64(got), float64(slack), "%s: want %v ± %v, got %v", what, want, slack, got)
		return
	}
	assert.Equal(h.t, want, got, what)
}

// exhaustRPM spends a fresh RPM bucket of perMinute: it acquires until the
// first rejection and returns how many were granted, the rejection, and the
// instant before the first Acquire. On a fake clock exactly perMinute are
// granted; on real time a slow run also gets what refilled meanwhile, never
// more.
func (h *quotaHarness) exhaustRPM(perMinute int) (int, gate.QuotaDecision, time.Time) {
	h.t.Helper()
	interval := time.Minute / time.Duration(perMinute)
	t0 := h.clk.Now()
	for n := 0; ; n++ {
		_, d := h.acquire(0)
		if d.Allowed {
			require.Less(h.t, n, 2*perMinute, "RPM %d never rejects", perMinute)
			continue
		}
		assert.Equal(h.t, gate.LimitRPM, d.Limit, "rejecting limit")
		if h.clk.Slack() == 0 {
			assert.Equal(h.t, perMinute, n, "granted before the first RPM rejection")
		} else {
			refilled := int(h.clk.Now().Sub(t0) / interval)
			assert.GreaterOrEqual(h.t, n, perMinute, "granted before the first RPM rejection")
			assert.LessOrEqual(h.t, n, perMinute+refilled, "granted before the first RPM rejection: the minute plus what refilled")
		}
		return n, d, t0
	}
}

// atMost asserts got = want on a fake clock; on real time, where the sleeps
// that led here may have overshot, that got is positive and at most want
// (within Slack).
func (h *quotaHarness) atMost(want, got time.Duration, what string) {
	h.t.Helper()
	if h.clk.Slack() == 0 {
		assert.Equal(h.t, want, got, what)
		return
	}
	assert.Positive(h.t, got, what)
	assert.LessOrEqual(h.t, got, want+h.clk.Slack(), what)
}

// early is how much before RetryAfter a "not yet" retry stands: one µs — the
// gates' resolution — on a fake clock, twice the Slack on real time.
func (h *quotaHarness) early() time.Duration { return max(2*h.clk.Slack(), time.Microsecond) }

// exactRetry pins RetryAfter's exactness on a rejection d of an est-token
// request by limit: a retry clearly earlier is rejected by the same limit,
// and a retry exactly RetryAfter after a rejection is granted. It returns the
// granted permit.
func (h *quotaHarness) exactRetry(d gate.QuotaDecision, est int64, limit string) gate.Permit {
	h.t.Helper()
	for d.RetryAfter <= h.early() {
		// On real time a slow run may leave too little of the wait to probe
		// "earlier" in: check the grant at RetryAfter, then use the next
		// rejection, which waits a full refill.
		require.Positive(h.t, h.clk.Slack(), "the rejection must leave a wait to probe: %+v", d)
		h.clk.Advance(d.RetryAfter)
		p, got := h.acquire(est)
		require.True(h.t, got.Allowed, "a retry exactly RetryAfter (%v) after a rejection must be granted: %+v", d.RetryAfter, got)
		h.release(p)
		d = h.rejected(est, limit)
	}
	h.clk.Advance(d.RetryAfter - h.early())
	again := h.rejected(est, limit)
	if h.clk.Slack() == 0 {
		assert.Equal(h.t, h.early(), again.RetryAfter, "retried %v before RetryAfter: RetryAfter is what was left", h.early())
	} else {
		// A real sleep may overshoot; what is left can only have shrunk.
		assert.LessOrEqual(h.t, again.RetryAfter, h.early()+h.clk.Slack(), "retried %v before RetryAfter: RetryAfter is what was left", h.early())
	}
	// Exactly RetryAfter after the latest rejection: granted.
	h.clk.Advance(again.RetryAfter)
	p, got := h.acquire(est)
	require.True(h.t, got.Allowed, "a retry exactly RetryAfter (%v) after a rejection must be granted: %+v", again.RetryAfter, got)
	return p
}

// requireTokensError asserts err is a *gate.TokensError for tokens.
func requireTokensError(t *testing.T, err error, tokens int64, what string) {
	t.Helper()
	require.Error(t, err, what)
	var te *gate.TokensError
	require.True(t, errors.As(err, &te), "%s: want a *gate.TokensError, got %T: %v", what, err, err)
	assert.Equal(t, tokens, te.Tokens, "%s: TokensError.Tokens", what)
}
