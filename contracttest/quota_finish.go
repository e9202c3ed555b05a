package contracttest

import (
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// quotaFinishCases pin gate.Finish, the give-back of a permit whose call
// ended — through the gate's own Finish when it is a gate.Finisher (one
// round trip on Redis), otherwise Settle then Release: either way the
// account is settled and the slot freed, exactly as the two calls would.
func quotaFinishCases() []quotaCase {
	return []quotaCase{
		{name: "FinishSettlesAndReleases", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			spent := h.last
			h.rejected(0, gate.LimitInFlight)
			h.finish(p, qTPM/2)
			h.granted(qTPM / 2) // the slot is free and half the minute refunded
			d := h.rejected(qBig, gate.LimitTPM)
			h.waits(spent.add(qBigWait), d, "refund spent again: RetryAfter")
		}},
		{name: "FinishDebitsTheDifference", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTPM / 2)
			spent := h.last
			h.finish(p, qTPM+qTokens)
			d := h.rejected(0, gate.LimitTPM) // not LimitInFlight: the slot is free
			h.waits(spent.add(qTPMWait), d, "overdrawn account, zero tokens: RetryAfter")
		}},
		{name: "FinishWithoutTPMOnlyReleases", limits: gate.Limits{RPM: qSlowRPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTokens)
			h.finish(p, 2*qTokens)
			h.granted(qTokens)
		}},
		{name: "FinishWithNegativeTokensKeepsTheEstimateAndReleases", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			p := h.granted(qTPM)
			h.finish(p, -1)
			h.rejected(qBig, gate.LimitTPM) // nothing refunded, and not LimitInFlight
		}},
		{name: "FinisherFinishNegativeIsATokensErrorAndHoldsTheSlot", limits: gate.Limits{TPM: qTPM, MaxInFlight: 1}, run: func(h *quotaHarness) {
			f, ok := h.g.(gate.Finisher)
			if !ok {
				h.t.Skip("the gate is not a gate.Finisher: gate.Finish settles and releases")
			}
			p := h.granted(qTPM / 2)
			err := f.Finish(h.t.Context(), p, -1)
			requireTokensError(h.t, err, -1, "Finish(-1)")
			h.rejected(0, gate.LimitInFlight)
			require.NoError(h.t, f.Finish(h.t.Context(), p, qTPM/2))
			h.granted(qTPM / 2)
		}},
	}
}
