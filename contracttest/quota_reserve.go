package contracttest

import (
	"time"

	"github.com/pgw-go/pgw/gate"
)

// quotaReserveCases pin the all-or-nothing reservation across the two rates
// (a rejection by one reserves nothing in the other) and the bounds of a
// settlement: a refund cannot bank credit below an empty bucket, and a debit
// cannot block a source for more than one extra minute.
func quotaReserveCases() []quotaCase {
	return []quotaCase{
		{name: "RPMRejectionReservesNoTokens", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(0)
			first := h.last
			h.granted(0)
			for range 3 {
				h.rejected(qTPM, gate.LimitRPM)
			}
			// Had the rejections reserved their minutes of tokens, TPM would
			// now wait minutes and name itself; RPM's 30s wait stands alone.
			d := h.rejected(qTPM, gate.LimitRPM)
			h.waits(first.add(qSlowWait), d, "RPM rejections reserved no tokens: RetryAfter is RPM's wait")
		}},
		{name: "TPMRejectionReservesNoRequest", limits: gate.Limits{RPM: qSlowRPM, TPM: qTPM}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last
			for range 3 {
				h.rejected(qTokens, gate.LimitTPM)
			}
			// The second of the minute's two requests is still there.
			h.advanceTo(spent.add(qTPMWait))
			h.granted(qTokens)
			h.rejected(0, gate.LimitRPM)
		}},
		{name: "RefundAfterTheBucketDrainedBanksNoCredit", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			p := h.granted(qTokens)
			spent := h.last
			h.advanceTo(spent.add(qTPMWait)) // the estimate has drained away,
			h.granted(0)                     // and a call in between has seen it
			h.settle(p, 0)                   // a refund of an empty bucket: nothing
			h.granted(qTPM)
			full := h.last
			d := h.rejected(qTokens, gate.LimitTPM)
			h.waits(full.add(qTPMWait), d, "a full minute taken after the refund: RetryAfter as without it")
		}},
		{name: "DebtIsCappedAtOneExtraMinute", limits: gate.Limits{TPM: qTPM}, run: func(h *quotaHarness) {
			p := h.granted(qTokens)
			h.settle(p, 1<<40)
			settled := h.last
			d := h.rejected(0, gate.LimitTPM)
			h.waits(settled.add(time.Minute), d, "an absurd debit overdraws one extra minute, no more")
			d = h.rejected(qTPM, gate.LimitTPM)
			h.waits(settled.add(2*time.Minute), d, "a whole minute's tokens wait for the overdraft and the minute")
		}},
	}
}
