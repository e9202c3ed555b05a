package contracttest

import "github.com/pgw-go/pgw/gate"

// quotaSettleCases pin Settle: refunds, debits (an overdrawn account blocks
// even zero-token requests until it refills), Settle after Release, and bad
// token counts.
func quotaSettleCases() []quotaCase {
	return []quotaCase{
		{name: "SettleRefundsTheDifference", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			spent := h.last
			h.rejected(qBig, gate.LimitTPM)
			h.settle(p, qTPM/2)
			h.granted(qTPM / 2)
			d := h.rejected(qBig, gate.LimitTPM)
			h.waits(spent.add(qBigWait), d, "refund spent again: RetryAfter")
		}},
		{name: "SettleDebitsTheDifference", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			// The account ends this far past a minute's allowance: a refill of
			// 200ms, long enough for the three calls before the first check
			// even on a loaded machine.
			const over = qTokens
			p := h.granted(qTPM / 2)
			spent := h.last
			h.settle(p, qTPM+over)
			// Overdrawn: a zero-token request waits for the overdraft to
			// refill, a request of `over` tokens for twice as long.
			d := h.rejected(0, gate.LimitTPM)
			h.waits(spent.add(qTPMWait), d, "overdrawn account, zero tokens: RetryAfter")
			d = h.rejected(over, gate.LimitTPM)
			h.waits(spent.add(2*qTPMWait), d, "overdrawn account: RetryAfter")
			h.exactRetry(d, over, gate.LimitTPM)
		}},
		{name: "SettleEqualToEstimateChangesNothing", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			spent := h.last
			h.settle(p, qTPM)
			d := h.rejected(qBig, gate.LimitTPM)
			h.waits(spent.add(qBigWait), d, "settled to the estimate: RetryAfter as before")
		}},
		{name: "SettleAfterReleaseStillCorrects", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			h.release(p)
			h.settle(p, 0)
			h.granted(qTPM)
		}},
		{name: "SettleNegativeIsATokensError", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			err := h.g.Settle(h.t.Context(), p, -1)
			requireTokensError(h.t, err, -1, "Settle(-1)")
			// Nothing was refunded.
			h.rejected(qBig, gate.LimitTPM)
		}},
	}
}
