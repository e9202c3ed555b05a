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
// one request and 2 000 tokens every 200ms, far above a round trip or a Slack
// of tens of milliseconds, while a minute's allowance (300 requests, one
// 600 000-token call) is quick to spend.
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

// RunQuota runs the quota contract of gate.QuotaGate against the
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
// Durations the gate reports are compared exactly on a fake clock and, on
// real time, with the bracket the package doc describes; a run on real time
// takes a few seconds.
func RunQuota(t *testing.T, newGate QuotaFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("q%x%x", time.Now().UnixNano()&0xffffff, run)
	var cases []quotaCase
	cases = append(cases, quotaRateCases()...)
	cases = append(cases, quotaSettleCases()...)
	cases = append(cases, quotaReserveCases()...)
	cases = append(cases, quotaFinishCases()...)
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
				c.run(&quotaHarness{t: t, g: g, timing: timing{clk: clk}, src: src})
			})
		}
	})
}

// quotaHarness holds one subtest's gate, clock and source and wraps the
// port's calls so that every error fails the subtest at once. Each wrapper
// brackets its call (timing.last), which the assertions after it use.
type quotaHarness struct {
	timing
	t   *testing.T
	g   gate.QuotaGate
	src string
}

// other returns the name of the extra source with suffix.
func (h *quotaHarness) other(suffix string) string { return h.src + "-" + suffix }

func (h *quotaHarness) acquire(est int64) (gate.Permit, gate.QuotaDecision) {
	return h.acquireOn(h.src, est)
}

func (h *quotaHarness) acquireOn(src string, est int64) (gate.Permit, gate.QuotaDecision) {
	h.t.Helper()
	lo := h.begin()
	p, d, err := h.g.Acquire(h.t.Context(), src, est)
	h.end(lo)
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

// rejectedSince acquires an est-token request of a bucket last emptied at
// spent, which refills est every wait, and requires its rejection by limit,
// which it returns with the moment the request fits: spent + wait. On real
// time a request that landed at or after that moment (a machine that fell
// behind) is rightly granted and empties the bucket as of that moment: the
// next request is judged from there, a few times at most.
func (h *quotaHarness) rejectedSince(spent moment, wait time.Duration, est int64, limit string) (gate.QuotaDecision, moment) {
	h.t.Helper()
	for i := 1; ; i++ {
		require.LessOrEqual(h.t, i, 2*maxAttempts, "Acquire(%d) landed after the refill %d times in a row", est, i-1)
		p, d := h.acquire(est)
		next := spent.add(wait)
		if !d.Allowed {
			assert.Equal(h.t, limit, d.Limit, "Acquire(%d): rejecting limit", est)
			return d, next
		}
		require.False(h.t, h.before(next), "Acquire(%d) must be rejected by %s until %v: %+v", est, limit, next.lo, d)
		h.t.Logf("Acquire(%d) ran from %v to %v, at or after the refill at %v: granting it is right, judging the next one", est, h.last.lo, h.last.hi, next.lo)
		h.release(p)
		spent = next
	}
}

// drained acquires est-token requests until one is rejected by limit, and
// returns that rejection: at once on a fake clock. On real time a grant that
// landed late leaves in the bucket what refilled meanwhile (more than one
// request's worth after a stall), which the requests before the rejection
// spend.
func (h *quotaHarness) drained(est int64, limit string) gate.QuotaDecision {
	h.t.Helper()
	for n := 0; ; n++ {
		p, d := h.acquire(est)
		if !d.Allowed {
			assert.Equal(h.t, limit, d.Limit, "Acquire(%d): rejecting limit", est)
			return d
		}
		require.False(h.t, h.exact(), "Acquire(%d) must be rejected by %s: %+v", est, limit, d)
		require.Less(h.t, n, 100, "Acquire(%d) is never rejected by %s", est, limit)
		h.release(p)
	}
}

func (h *quotaHarness) settle(p gate.Permit, actual int64) {
	h.t.Helper()
	lo := h.begin()
	err := h.g.Settle(h.t.Context(), p, actual)
	h.end(lo)
	require.NoError(h.t, err, "Settle(%+v, %d)", p, actual)
}

// finish gives p back through gate.Finish: the gate's own Finish when it is
// a gate.Finisher, otherwise Settle then Release.
func (h *quotaHarness) finish(p gate.Permit, actual int64) {
	h.t.Helper()
	lo := h.begin()
	err := gate.Finish(h.t.Context(), h.g, p, actual)
	h.end(lo)
	require.NoError(h.t, err, "gate.Finish(%+v, %d)", p, actual)
}

func (h *quotaHarness) release(p gate.Permit) {
	h.t.Helper()
	lo := h.begin()
	err := h.g.Release(h.t.Context(), p)
	h.end(lo)
	require.NoError(h.t, err, "Release(%+v)", p)
}

// waits asserts that rejection, the answer of the latest call, waits until
// free: RetryAfter = free − now.
func (h *quotaHarness) waits(free moment, rejection gate.QuotaDecision, what string) {
	h.t.Helper()
	h.within(h.t, free.since(h.last).clamped(), rejection.RetryAfter, what)
}

// grantsUntilRejected acquires zero-token requests until the first rejection
// and returns how many were granted, the rejection, and the bracket of the
// first Acquire.
func (h *quotaHarness) grantsUntilRejected(limit int) (int, gate.QuotaDecision, moment) {
	h.t.Helper()
	var first moment
	for n := 0; ; n++ {
		_, d := h.acquire(0)
		if n == 0 {
			first = h.last
		}
		if !d.Allowed {
			return n, d, first
		}
		require.Less(h.t, n, 2*limit, "RPM %d never rejects", limit)
	}
}

// refilled is how many whole requests an RPM of perMinute refills from the
// moment from until the latest call: ⌊(call − from) / interval⌋, a range on
// real time (never below 0: the calls come in order).
func (h *quotaHarness) refilled(from moment, perMinute int) (lo, hi int) {
	whole := func(d time.Duration) int {
		return int(max(d, 0).Nanoseconds() * int64(perMinute) / time.Minute.Nanoseconds())
	}
	passed := h.last.since(from)
	return whole(passed.lo - h.margin()), whole(passed.hi + h.margin())
}

// countWithin asserts got ∈ [lo, hi]; equal on a fake clock.
func (h *quotaHarness) countWithin(lo, hi, got int, what string) {
	h.t.Helper()
	if lo == hi {
		assert.Equal(h.t, lo, got, what)
		return
	}
	assert.GreaterOrEqual(h.t, got, lo, what)
	assert.LessOrEqual(h.t, got, hi, what)
}

// exhaustRPM spends a fresh RPM bucket of perMinute: it acquires until the
// first rejection, which it returns, and asserts how many were granted and
// the rejection's RetryAfter. The bucket is full at the first Acquire, so
// perMinute requests are granted at once, plus one for each interval that
// passed until the rejection (none on a fake clock), and the k-th request
// beyond perMinute fits k intervals after the first Acquire (rounded up to
// the µs: on a fake clock the first wait of an RPM of 270 is ⌈60s/270⌉µs).
func (h *quotaHarness) exhaustRPM(perMinute int) gate.QuotaDecision {
	h.t.Helper()
	n, d, first := h.grantsUntilRejected(perMinute)
	assert.Equal(h.t, gate.LimitRPM, d.Limit, "rejecting limit")
	lo, hi := h.refilled(first, perMinute)
	// A round trip slower than an interval may let the bucket refill past
	// full between two grants, which only lowers the count: on real time
	// the floor is perMinute.
	if !h.exact() {
		lo = 0
	}
	h.countWithin(perMinute+lo, perMinute+hi, n, "granted before the first RPM rejection: the minute plus what refilled")
	k := int64(n - perMinute + 1)
	next := first.add(ceilMicro(time.Duration(k)*time.Minute, int64(perMinute)))
	h.waits(next, d, fmt.Sprintf("RPM %d rejection: RetryAfter = until one request refills", perMinute))
	return d
}

// early is how much before the end of a wait of ra a "not yet" retry
// stands: one µs — the gates' resolution — on a fake clock; on real time
// twice the Slack, or half the wait when that is shorter, and the retry
// counts only if its bracket shows it landed before the wait ended
// (timing.before). A wait too short to retry early in is 0.
func (h *quotaHarness) early(ra time.Duration) time.Duration {
	if h.exact() {
		return time.Microsecond
	}
	if ra < 2*rounding {
		return 0
	}
	return min(2*h.clk.Slack(), ra/2)
}

// exactRetry pins RetryAfter's exactness on d, the rejection of an est-token
// request by limit that the latest call returned: a retry clearly earlier is
// rejected by the same limit, with RetryAfter what was left, and a retry
// exactly RetryAfter after a rejection is granted. It returns the granted
// permit and the moment the retried request fitted.
//
// On real time a retry meant to land early may land at or after the end of
// the wait, where granting it is right; the check then starts over from the
// next rejection, a few times at most.
func (h *quotaHarness) exactRetry(d gate.QuotaDecision, est int64, limit string) (gate.Permit, moment) {
	h.t.Helper()
	for i := 1; ; i++ {
		require.LessOrEqual(h.t, i, 2*maxAttempts, "%d rejections in a row left no wait to retry early in, or their early retries landed too late to judge", i-1)
		free := h.last.add(d.RetryAfter)
		early := h.early(d.RetryAfter)
		if early == 0 || early >= d.RetryAfter {
			// On real time a slow run may leave too little of the wait to
			// probe "earlier" in: check the grant at RetryAfter, then use
			// the next rejection, which waits a full refill. (On a fake
			// clock a wait of 1µs or less is a wrong one.)
			require.False(h.t, h.exact(), "the rejection must leave a wait to probe: %+v", d)
			h.advanceTo(free)
			p, got := h.acquire(est)
			require.True(h.t, got.Allowed, "a retry exactly RetryAfter (%v) after a rejection must be granted: %+v", d.RetryAfter, got)
			h.release(p)
			d = h.drained(est, limit)
			continue
		}
		h.advanceTo(free.add(-early))
		p, again := h.acquire(est)
		if again.Allowed {
			require.False(h.t, h.before(free), "a retry %v before RetryAfter (%v) must be rejected: %+v", early, d.RetryAfter, again)
			h.t.Logf("a retry meant to land %v before the wait ended at %v ran from %v to %v: granting it is right, starting over",
				early, free.lo, h.last.lo, h.last.hi)
			h.release(p)
			d = h.drained(est, limit)
			continue
		}
		assert.Equal(h.t, limit, again.Limit, "retried %v before RetryAfter: rejecting limit", early)
		h.waits(free, again, fmt.Sprintf("retried %v before RetryAfter: RetryAfter is what was left", early))
		// Exactly RetryAfter after the latest rejection: granted.
		free = h.last.add(again.RetryAfter)
		h.advanceTo(free)
		p, got := h.acquire(est)
		require.True(h.t, got.Allowed, "a retry exactly RetryAfter (%v) after a rejection must be granted: %+v", again.RetryAfter, got)
		return p, free
	}
}

// requireTokensError asserts err is a *gate.TokensError for tokens.
func requireTokensError(t *testing.T, err error, tokens int64, what string) {
	t.Helper()
	require.Error(t, err, what)
	var te *gate.TokensError
	require.True(t, errors.As(err, &te), "%s: want a *gate.TokensError, got %T: %v", what, err, err)
	assert.Equal(t, tokens, te.Tokens, "%s: TokensError.Tokens", what)
}
