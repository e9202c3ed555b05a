package contracttest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// quotaRateCases pin RPM and TPM: a minute's allowance at once, continuous
// refill, exact RetryAfter, the longer wait when both reject, token counts no
// wait could admit, and sources without limits.
func quotaRateCases() []quotaCase {
	return []quotaCase{
		{name: "RPMAdmitsAMinuteOfRequestsThenRejects", limits: gate.Limits{RPM: qRPM}, run: func(h *quotaHarness) {
			// exhaustRPM asserts the count and the rejection's RetryAfter:
			// the next request refills one interval after the first was
			// taken, for each request granted beyond the minute.
			h.exhaustRPM(qRPM)
		}},
		{name: "RPMRetryAtRetryAfterIsAdmittedEarlierIsNot", limits: gate.Limits{RPM: qRPM}, run: func(h *quotaHarness) {
			d := h.exhaustRPM(qRPM)
			_, fitted := h.exactRetry(d, 0, gate.LimitRPM)
			d, next := h.rejectedSince(fitted, qInterval, 0, gate.LimitRPM)
			h.waits(next, d, "after the retry took the refilled request: RetryAfter = one interval")
			h.exactRetry(d, 0, gate.LimitRPM)
		}},
		{name: "RPMRefillsContinuously", limits: gate.Limits{RPM: qRPM}, run: func(h *quotaHarness) {
			d := h.exhaustRPM(qRPM)
			// At RetryAfter one request fits; two intervals later, two more:
			// three, and on real time one more per interval the calls took.
			free := h.last.add(d.RetryAfter)
			h.advanceTo(free.add(2 * qInterval))
			n, d, _ := h.grantsUntilRejected(qRPM)
			require.Equal(h.t, gate.LimitRPM, d.Limit, "rejecting limit")
			lo, hi := h.refilled(free, qRPM)
			h.countWithin(lo+1, hi+1, n, "granted two intervals after RetryAfter")
			h.waits(free.add(time.Duration(n)*qInterval), d, "refilled requests spent: RetryAfter = until the next refills")
		}},
		{name: "RPMRetryAfterIsExactWhenTheLimitDoesNotDivideAMinute", limits: gate.Limits{RPM: qOddRPM}, run: func(h *quotaHarness) {
			// One request refills every 222 222.2…µs: RetryAfter rounds up
			// to the µs, and the retries land on exactly those µs.
			// exhaustRPM asserts the first RetryAfter (⌈60s/270⌉µs on a
			// fake clock).
			d := h.exhaustRPM(qOddRPM)
			_, fitted := h.exactRetry(d, 0, gate.LimitRPM)
			d, _ = h.rejectedSince(fitted, ceilMicro(time.Minute, qOddRPM), 0, gate.LimitRPM)
			h.exactRetry(d, 0, gate.LimitRPM)
		}},
		{name: "TPMAdmitsAMinuteOfTokensThenRejects", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last
			// A zero-token request fits a full (not overdrawn) bucket.
			h.granted(0)
			d, next := h.rejectedSince(spent, qTPMWait, qTokens, gate.LimitTPM)
			h.waits(next, d, "TPM rejection: RetryAfter = until the tokens refill")
			if h.exact() { // on real time one token refills in 100µs
				d = h.rejected(1, gate.LimitTPM)
				assert.Equal(h.t, time.Millisecond/qPerMilli, d.RetryAfter, "TPM rejection of one token")
			}
		}},
		{name: "TPMRetryAtRetryAfterIsAdmittedEarlierIsNot", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			d, _ := h.rejectedSince(h.last, qTPMWait, qTokens, gate.LimitTPM)
			_, fitted := h.exactRetry(d, qTokens, gate.LimitTPM)
			d, next := h.rejectedSince(fitted, qTPMWait, qTokens, gate.LimitTPM)
			h.waits(next, d, "after the retry took the refilled tokens: RetryAfter = their refill time")
		}},
		{name: "TPMRetryAfterIsExactWhenTheLimitDoesNotDivideAMinute", limits: gate.Limits{TPM: qOddTPM}, run: func(h *quotaHarness) {
			// 1 234 567 TPM: a token refills every 48.6…µs.
			h.granted(qOddTPM)
			refill := ceilMicro(time.Minute*qOddTokens, qOddTPM)
			d, next := h.rejectedSince(h.last, refill, qOddTokens, gate.LimitTPM)
			h.waits(next, d, fmt.Sprintf("TPM %d: RetryAfter", qOddTPM))
			_, fitted := h.exactRetry(d, qOddTokens, gate.LimitTPM)
			d, _ = h.rejectedSince(fitted, refill, qOddTokens, gate.LimitTPM)
			h.exactRetry(d, qOddTokens, gate.LimitTPM)
		}},
		{name: "TPMRefillsContinuously", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last
			h.advanceTo(spent.add(qTPMWait))
			h.granted(qTokens)
			d, next := h.rejectedSince(spent.add(qTPMWait), qTPMWait, qTokens, gate.LimitTPM)
			h.waits(next, d, "refilled tokens spent: RetryAfter = until the next refill")
		}},
		{name: "EstimateAboveTPMIsATokensError", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			_, d, err := h.g.Acquire(h.t.Context(), h.src, qTPM+1)
			requireTokensError(h.t, err, qTPM+1, "Acquire above TPM")
			assert.False(h.t, d.Allowed, "Acquire above TPM is not allowed")
			// Nothing was reserved: the whole minute is still there.
			h.granted(qTPM)
		}},
		{name: "NegativeEstimateIsATokensError", limits: gate.Limits{RPM: qRPM}, other: map[string]gate.Limits{"free": {}}, run: func(h *quotaHarness) {
			for _, src := range []string{h.src, h.other("free"), h.other("unknown")} {
				_, d, err := h.g.Acquire(h.t.Context(), src, -1)
				requireTokensError(h.t, err, -1, "Acquire(-1) on "+src)
				assert.False(h.t, d.Allowed, "Acquire(-1) on %s is not allowed", src)
			}
		}},
		{name: "BothRatesRejectRetryAfterIsTheLongerWaitRPM", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(0)
			first := h.last
			h.granted(qTPM)
			// TPM would admit qTokens in 200ms, RPM one request in 30s.
			d := h.rejected(qTokens, gate.LimitRPM)
			h.waits(first.add(qSlowWait), d, "RPM and TPM reject: RetryAfter is RPM's longer wait")
		}},
		{name: "BothRatesRejectRetryAfterIsTheLongerWaitTPM", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM / 2)
			first := h.last
			h.granted(qTPM / 2)
			// RPM would admit in 30s, TPM a whole minute's tokens in 60s.
			d := h.rejected(qTPM, gate.LimitTPM)
			h.waits(first.add(time.Minute), d, "RPM and TPM reject: RetryAfter is TPM's longer wait")
		}},
		{name: "UnknownSourceIsUnlimited", limits: gate.Limits{RPM: qSlowRPM}, run: func(h *quotaHarness) {
			src := h.other("unknown")
			for range 100 {
				p := h.grantedOn(src, 1<<40)
				h.settle(p, 1<<41)
				h.release(p)
			}
		}},
		{name: "ZeroLimitsAreUnlimited", limits: gate.Limits{}, run: func(h *quotaHarness) {
			var held []gate.Permit
			for range 100 {
				held = append(held, h.granted(1<<40))
			}
			for _, p := range held {
				h.settle(p, 1<<41)
				h.release(p)
			}
		}},
		{name: "SourcesAreIndependent", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM, MaxInFlight: 2},
			other: map[string]gate.Limits{"b": {RPM: qSlowRPM, TPM: qTPM, MaxInFlight: 2}}, run: func(h *quotaHarness) {
				h.granted(qTPM)
				h.granted(0)
				h.rejected(0, gate.LimitRPM)
				b := h.other("b")
				h.grantedOn(b, qTPM)
				h.grantedOn(b, 0)
				_, d := h.acquireOn(b, 0)
				require.False(h.t, d.Allowed, "b's own RPM is spent: %+v", d)
			}},
	}
}

// ceilMicro is d/n rounded up to a whole µs: the resolution of the gates.
func ceilMicro(d time.Duration, n int64) time.Duration {
	us := int64(d / time.Microsecond)
	return time.Duration((us+n-1)/n) * time.Microsecond
}
