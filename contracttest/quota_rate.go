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
			d = h.rejected(0, gate.LimitRPM)
			h.waits(fitted.add(qInterval), d, "after the retry took the refilled request: RetryAfter = one interval")
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
			h.exactRetry(d, 0, gate.LimitRPM)
			h.exactRetry(h.rejected(0, gate.LimitRPM), 0, gate.LimitRPM)
		}},
		{name: "TPMAdmitsAMinuteOfTokensThenRejects", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last
			// A zero-token request fits a full (not overdrawn) bucket.
			h.granted(0)
			d := h.rejected(qTokens, gate.LimitTPM)
			h.waits(spent.add(qTPMWait), d, "TPM rejection: RetryAfter = until the tokens refill")
			if h.exact() { // on real time one token refills in 100µs
				d = h.rejected(1, gate.LimitTPM)
				assert.Equal(h.t, time.Millisecond/qPerMilli, d.RetryAfter, "TPM rejection of one token")
			}
		}},
		{name: "TPMRetryAtRetryAfterIsAdmittedEarlierIsNot", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			_, fitted := h.exactRetry(h.rejected(qTokens, gate.LimitTPM), qTokens, gate.LimitTPM)
			d := h.rejected(qTokens, gate.LimitTPM)
			h.waits(fitted.add(qTPMWait), d, "after the retry took the refilled tokens: RetryAfter = their refill time")
		}},
		{name: "TPMRetryAfterIsExactWhenTheLimitDoesNotDivideAMinute", limits: gate.Limits{TPM: qOddTPM}, run: func(h *quotaHarness) {
			// 1 234 567 TPM: a token refills every 48.6…µs.
			h.granted(qOddTPM)
			spent := h.last
			d := h.rejected(qOddTokens, gate.LimitTPM)
			h.waits(spent.add(ceilMicro(time.Minute*qOddTokens, qOddTPM)), d, fmt.Sprintf("TPM %d: RetryAfter", qOddTPM))
			h.exactRetry(d, qOddTokens, gate.LimitTPM)
			h.exactRetry(h.rejected(qOddTokens, gate.LimitTPM), qOddTokens, gate.LimitTPM)
		}},
		{name: "TPMRefillsContinuously", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last // the bucket empty
			for i := 1; ; i++ {
				require.LessOrEqual(h.t, i, maxAttempts, "every second request landed too late to judge")
				h.advanceTo(spent.add(qTPMWait))
				h.granted(qTokens)
				_, d := h.acquire(qTokens)
				next := spent.add(2 * qTPMWait)
				if !d.Allowed {
					assert.Equal(h.t, gate.LimitTPM, d.Limit, "Acquire(%d): rejecting limit", qTokens)
					h.waits(next, d, "refilled tokens spent: RetryAfter = until the next refill")
					return
				}
				// On real time a machine that fell behind may make the
				// second request once the next qTokens have refilled too,
				// and granting it is right; the bucket is then as if
				// emptied at next.
				require.False(h.t, h.before(next), "refilled tokens spent: Acquire(%d) before the next refill must be rejected: %+v", qTokens, d)
				spent = next
			}
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
