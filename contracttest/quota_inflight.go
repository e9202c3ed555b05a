package contracttest

import (
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/gate"
)

// quotaInFlightCases pin MaxInFlight: RetryAfter 0, Release freeing exactly
// one slot however often it is called, and rejections that reserve nothing.
func quotaInFlightCases() []quotaCase {
	return []quotaCase{
		{name: "InFlightRejectionRetryAfterIsZero", limits: gate.Limits{MaxInFlight: 2}, run: func(h *quotaHarness) {
			h.granted(0)
			h.granted(0)
			d := h.rejected(0, gate.LimitInFlight)
			assert.Equal(h.t, time.Duration(0), d.RetryAfter, "in-flight rejection: no certain wait")
			// Time alone frees no slot.
			h.clk.Advance(qInterval)
			d = h.rejected(0, gate.LimitInFlight)
			assert.Equal(h.t, time.Duration(0), d.RetryAfter, "in-flight rejection later: RetryAfter")
		}},
		{name: "ReleaseFreesItsSlot", limits: gate.Limits{MaxInFlight: 2}, run: func(h *quotaHarness) {
			p1 := h.granted(0)
			h.granted(0)
			h.rejected(0, gate.LimitInFlight)
			h.release(p1)
			h.granted(0)
			h.rejected(0, gate.LimitInFlight)
		}},
		{name: "ReleaseTwiceFreesOneSlot", limits: gate.Limits{MaxInFlight: 2}, run: func(h *quotaHarness) {
			p1 := h.granted(0)
			p2 := h.granted(0)
			h.release(p1)
			h.release(p1)
			p3 := h.granted(0)
			// p2 still holds its slot: the second Release freed nothing.
			h.rejected(0, gate.LimitInFlight)
			h.release(p1)
			h.release(gate.Permit{})
			h.rejected(0, gate.LimitInFlight)
			h.release(p2)
			h.release(p3)
			h.granted(0)
			h.granted(0)
			h.rejected(0, gate.LimitInFlight)
		}},
		{name: "InFlightRejectionReservesNoTokens", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTPM / 2)
			h.rejected(qTPM/2, gate.LimitInFlight)
			h.rejected(qTPM/2, gate.LimitInFlight)
			h.release(p)
			h.granted(qTPM / 2)
			h.rejected(qBig, gate.LimitTPM)
		}},
		{name: "InFlightRejectionReservesNoRequest", limits: gate.Limits{RPM: qSlowRPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(0)
			for range 3 {
				h.rejected(0, gate.LimitInFlight)
			}
			h.release(p)
			h.granted(0)
			h.rejected(0, gate.LimitRPM)
		}},
		{name: "RateRejectionTakesNoSlot", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			h.release(h.granted(qTPM))
			p, _ := h.exactRetry(h.rejected(qTokens, gate.LimitTPM), qTokens, gate.LimitTPM)
			h.rejected(0, gate.LimitInFlight)
			h.release(p)
			h.granted(0)
		}},
		{name: "RateAndInFlightRejectRetryAfterIsTheRateWait", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			h.granted(qTPM)
			spent := h.last
			d := h.rejected(qTokens, gate.LimitTPM)
			h.waits(spent.add(qTPMWait), d, "TPM and MaxInFlight reject: RetryAfter is TPM's wait")
		}},
	}
}
