package admission

import (
	"context"

	"github.com/pgw-go/pgw/gate"
)

// admitted says what a combined admission (admit) took besides the
// breaker's decision and the quota's permit.
type admitted struct {
	// budget: the advertised budget was taken (or rejected) with it, so
	// Pick does not ask the budget again.
	budget bool
}

// admit asks the breaker and the quota about source in one operation of
// the quota gate (gate.Admitter), and with them the advertised budget when
// Pick would ask it and the quota gate can (gate.BudgetAdmitter): on Redis
// one round trip for all three. Pick has taken the source's pacer slot
// before, so a full window leaves the quota and the budget untouched. ok is
// false when the quota gate cannot combine with the breaker. i is name's
// selector index.
func (a *SourceAdmission) admit(ctx context.Context, i int, name string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, took admitted, ok bool, err error) {
	if a.budgeter != nil && a.adv != nil && !a.silentAt(i) {
		d, p, qd, ok, err = a.budgeter.AdmitBudget(ctx, a.breaker, a.adv.Budget, name, estTokens)
		if ok {
			took.budget = true
			return d, p, qd, took, true, err
		}
	}
	d, p, qd, ok, err = a.admitter.Admit(ctx, a.breaker, name, estTokens)
	return d, p, qd, took, ok, err
}

// unpace frees the pacer slot Pick took for source when it loses before a
// ticket holds the slot.
func (a *SourceAdmission) unpace(name string, paced bool) {
	if paced {
		a.pacer.Release(name, PaceNeutral)
	}
}
