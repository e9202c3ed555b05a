package contracttest

import (
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
			n, d, t0 := h.exhaustRPM(qRPM)
			// The next request refills one interval after the first was
			// taken, for each request granted beyond the minute.
			next := t0.Add(time.Duration(n-qRPM+1) * qInterval)
			h.near(next.Sub(h.clk.Now()), d.RetryAfter, "RPM rejection: RetryAfter = until one request refills")
		}},
		{name: "RPMRetryAtRetryAfterIsAdmittedEarlierIsNot", limits: gate.Limits{RPM: qRPM}, run: func(h *quotaHarness) {
			_, d, _ := h.exhaustRPM(qRPM)
			h.exactRetry(d, 0, gate.LimitRPM)
			d = h.rejected(0, gate.LimitRPM)
			h.atMost(qInterval, d.RetryAfter, "after the retry took the refilled request: RetryAfter = one interval")
			h.exactRetry(d, 0, gate.LimitRPM)
		}},
		{name: "RPMRefillsContinuously", limits: gate.Limits{RPM: qRPM}, run: func(h *quotaHarness) {
			_, d, _ := h.exhaustRPM(qRPM)
			// At RetryAfter one request fits; two intervals later, two more.
			h.clk.Advance(d.RetryAfter + 2*qInterval)
			for range 3 {
				h.granted(0)
			}
			d = h.rejected(0, gate.LimitRPM)
			h.atMost(qInterval, d.RetryAfter, "refilled requests spent: RetryAfter = one interval")
		}},
		{name: "RPMRetryAfterIsExactWhenTheLimitDoesNotDivideAMinute", limits: gate.Limits{RPM: qOddRPM}, run: func(h *quotaHarness) {
			// One request refills every 222 222.2…µs: RetryAfter rounds up
			// to the µs, and the retries land on exactly those µs.
			_, d, _ := h.exhaustRPM(qOddRPM)
			if h.clk.Slack() == 0 {
				assert.Equal(h.t, ceilMicro(time.Minute, qOddRPM), d.RetryAfter, "RPM %d: RetryAfter", qOddRPM)
			}
			h.exactRetry(d, 0, gate.LimitRPM)
			h.exactRetry(h.rejected(0, gate.LimitRPM), 0, gate.LimitRPM)
		}},
		{name: "TPMAdmitsAMinuteOfTokensThenRejects", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			t0 := h.clk.Now()
			h.granted(qTPM)
			// A zero-token request fits a full (not overdrawn) bucket.
			h.granted(0)
			d := h.rejected(qTokens, gate.LimitTPM)
			h.near(t0.Add(qTPMWait).Sub(h.clk.Now()), d.RetryAfter, "TPM rejection: RetryAfter = until the tokens refill")
			if h.clk.Slack() == 0 { // on real time one token refills in 100µs
				d = h.rejected(1, gate.LimitTPM)
				assert.Equal(h.t, time.Millisecond/qPerMilli, d.RetryAfter, "TPM rejection of one token")
			}
		}},
		{name: "TPMRetryAtRetryAfterIsAdmittedEarlierIsNot", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			h.exactRetry(h.rejected(qTokens, gate.LimitTPM), qTokens, gate.LimitTPM)
			d := h.rejected(qTokens, gate.LimitTPM)
			h.atMost(qTPMWait, d.RetryAfter, "after the retry took the refilled tokens: RetryAfter = their refill time")
		}},
		{name: "TPMRetryAfterIsExactWhenTheLimitDoesNotDivideAMinute", limits: gate.Limits{TPM: qOddTPM}, run: func(h *quotaHarness) {
			// 1 234 567 TPM: a token refills every 48.6…µs.
			h.granted(qOddTPM)
			d := h.rejected(qOddTokens, gate.LimitTPM)
			if h.clk.Slack() == 0 {
				assert.Equal(h.t, ceilMicro(time.Minute*qOddTokens, qOddTPM), d.RetryAfter, "TPM %d: RetryAfter", qOddTPM)
			}
			h.exactRetry(d, qOddTokens, gate.LimitTPM)
			h.exactRetry(h.rejected(qOddTokens, gate.LimitTPM), qOddTokens, gate.LimitTPM)
		}},
		{name: "TPMRefillsContinuously", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			h.clk.Advance(qTPMWait + h.clk.Slack())
			h.granted(qTokens)
			h.rejected(qTokens, gate.LimitTPM)
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
			t0 := h.clk.Now()
			h.granted(0)
			h.granted(qTPM)
			// TPM would admit qTokens in 200ms, RPM one request in 30s.
			d := h.rejected(qTokens, gate.LimitRPM)
			h.near(t0.Add(qSlowWait).Sub(h.clk.Now()), d.RetryAfter, "RPM and TPM reject: RetryAfter is RPM's longer wait")
		}},
		{name: "BothRatesRejectRetryAfterIsTheLongerWaitTPM", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM}, run: func(h *quotaHarness) {
			t0 := h.clk.Now()
			h.granted(qTPM / 2)
			h.granted(qTPM / 2)
			// RPM would admit in 30s, TPM a whole minute's tokens in 60s.
			d := h.rejected(qTPM, gate.LimitTPM)
			h.near(t0.Add(time.Minute).Sub(h.clk.Now()), d.RetryAfter, "RPM and TPM reject: RetryAfter is TPM's longer wait")
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
